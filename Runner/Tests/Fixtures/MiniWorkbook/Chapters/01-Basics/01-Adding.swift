/// Adds two numbers. (The learner finished this one.)
public func add(_ a: Int, _ b: Int) -> Int {
  a.advanced(by: b)
}
