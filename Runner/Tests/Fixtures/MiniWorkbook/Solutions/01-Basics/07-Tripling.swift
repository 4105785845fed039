/// Triples `value`.
public func triple(_ value: Int) -> Int {
  value * 3
}
