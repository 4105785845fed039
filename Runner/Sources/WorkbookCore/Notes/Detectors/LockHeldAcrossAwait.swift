import Foundation

/// ``NoteDetector/lockHeldAcrossAwait``: a lock held while the task is suspended blocks every
/// other taker for as long as the await lasts, and may be released on another thread.
extension CodeText {
  func locksHeldAcrossAwait() -> [Int] {
    let regions = asyncRegions()
    // A lock's `lock()` holds it until `unlock()`, or to the end of the block when none
    // follows; a semaphore's `wait()` is a lock only when a `signal()` follows (else it waits
    // for a callback, which `blockingWaitInAsyncCode` names).
    let pairs = [
      (take: #"\.lock\s*\(\s*\)"#, give: "unlock", needsRelease: false),
      (take: #"\.wait\s*\(\s*\)"#, give: "signal", needsRelease: true),
    ]
    return pairs.flatMap { pair in
      find(pair.take).compactMap { take -> Int? in
        guard inside(take, regions), !isAwaited(take),
          let scope = enclosingBlocks(of: take).first
        else { return nil }
        let rest = take..<scope.upperBound
        let release = #"\."# + pair.give + #"\s*\(\s*\)"#
        let deferred = ranges(#"\bdefer\s*\{[^{}]*"# + release, in: rest).first
        let given = find(release, in: rest).first
        let heldUntil: Int
        if let deferred, given.map({ deferred.contains($0) }) ?? true {
          heldUntil = scope.upperBound
        } else if let given {
          heldUntil = given
        } else if pair.needsRelease {
          return nil
        } else {
          heldUntil = scope.upperBound
        }
        return contains(#"\bawait\b"#, in: take..<heldUntil) ? take : nil
      }
    }
  }
}
