/// Doubles `value` (but loses the sign: a wrong "alternative").
public func double(_ value: Int) -> Int {
  Int(value.magnitude) * 2
}
