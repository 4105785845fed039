/// A quarter of `value`, from the learner's `half` (2.1).
public func quarter(_ value: Int) -> Int {
  half(half(value))
}
