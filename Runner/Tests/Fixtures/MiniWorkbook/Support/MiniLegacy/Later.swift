import Dispatch

/// Calls `completion` with `value` from a background queue, `times` times, the way
/// pre-concurrency callback APIs did (Swift 5 mode: no Sendable checking here).
public func deliverLater(_ value: Int, times: Int = 1, _ completion: @escaping (Int) -> Void) {
  DispatchQueue.global().async {
    for _ in 0..<times { completion(value) }
  }
}
