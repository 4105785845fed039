import Foundation

/// ``NoteDetector/blockingWaitInAsyncCode``: a thread blocked inside async code holds one of
/// the few threads every task shares; an awaited `wait()` (an async semaphore) suspends
/// instead, so it does not count, and neither does a wait inside a closure that another queue
/// or thread runs (`queue.async { … }`): that blocks one of its threads, not the pool's.
extension CodeText {
  func blockingWaitsInAsyncCode() -> [Int] {
    let regions = asyncRegions()
    // `.wait()` and its timed forms (a semaphore's, a group's, a condition's), not any
    // method that happens to be called `wait` (`race.wait(with: continuation)`).
    let waits = #"\.wait\s*\(\s*(\)|timeout\s*:|wallTimeout\s*:|until\s*:)"#
    return ranges(waits + #"|\bThread\.sleep\b|(?<![\w.])u?sleep\s*\("#).compactMap { wait in
      guard inside(wait.lowerBound, regions), !isAwaited(wait.lowerBound) else { return nil }
      for block in enclosingBlocks(of: wait.lowerBound) {
        if regions.contains(block) { break }
        if header(of: block.lowerBound).range(
          of: #"\.async(After)?\b|\bThread\b|detachNewThread"#, options: .regularExpression)
          != nil
        {
          return nil
        }
      }
      return wait.lowerBound
    }
  }

  /// Whether the call whose `.name(` starts at `offset` is awaited (`await gate.wait()`):
  /// an async method suspends, it does not block.

  func isAwaited(_ offset: Int) -> Bool {
    var index = offset - 1
    while index >= 0 {
      let here = character(at: index)
      if here.isLetter || here.isNumber || here == "_" || here == "." || here == "?"
        || here == "!" || here == ")" || here == "("
      {
        index -= 1
      } else {
        break
      }
    }
    let before = units.substring(to: max(0, index + 1))
    return before.range(of: #"\bawait\s*(try[?!]?\s*)?$"#, options: .regularExpression) != nil
  }
}
