/// Negates `value`.
public func negate(_ value: Int) -> Int {
  // TODO: return the negated value.
  value
}
