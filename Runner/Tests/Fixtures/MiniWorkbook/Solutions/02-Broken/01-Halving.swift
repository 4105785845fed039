/// Halves `value`.
public func half(_ value: Int) -> Int {
  value / 2
}
