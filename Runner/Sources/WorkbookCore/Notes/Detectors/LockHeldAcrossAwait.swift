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
        let releases = find(release, in: rest)
        if pair.needsRelease, releases.isEmpty { return nil }
        // A release inside a nested block (`if … { unlock(); return }`) ends the hold on that
        // path only: on the main path it lasts until a release in the lock's own block, or to
        // the block's end when the release is deferred or missing.
        let deferred = !ranges(#"\bdefer\s*\{[^{}]*"# + release, in: rest).isEmpty
        let own = releases.first { enclosingBlocks(of: $0).first == scope }
        let heldUntil = deferred ? scope.upperBound : own ?? scope.upperBound
        return contains(#"\bawait\b"#, in: take..<heldUntil) ? take : nil
      }
    }
  }
}
