/// Triples `value`.
public func triple(_ value: Int) -> Int {
  // TODO: return three times `value`.
  0
}
