/// Negates `value`.
public func negate(_ value: Int) -> Int {
  -value
}
