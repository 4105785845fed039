/// Doubles `value`.
public func double(_ value: Int) -> Int {
  value + value
}
