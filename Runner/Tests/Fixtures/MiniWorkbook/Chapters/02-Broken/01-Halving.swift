/// Halves `value`. (The learner left a typo.)
public func half(_ value: Int) -> Int {
  valu / 2
}
