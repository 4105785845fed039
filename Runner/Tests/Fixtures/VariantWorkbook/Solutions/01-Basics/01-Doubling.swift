/// Doubles `value`.
public func double(_ value: Int) -> Int {
  // Twice the value, for negative numbers too.
  value * 2
}
