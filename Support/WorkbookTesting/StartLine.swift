import Foundation
import Synchronization

/// Releases a few threads at the same instant, each then waiting a random few hundred
/// nanoseconds more: perturbed scheduling for a race whose window no fake can widen.
///
/// A check-then-act split with nothing between its two steps (a lookup and a store in two
/// separate locked sections, say) leaves a gap of some hundred nanoseconds. Two callers
/// started as tasks arrive microseconds apart and almost never meet in it; two threads
/// released together, each after a random offset of up to a microsecond or so, land in it
/// in a good share of the rounds, so a few hundred rounds catch the mistake every time.
/// Correct code is right whatever the offsets, so the rounds never fail it.
///
/// Call ``go(jitter:)`` on threads of your own (a ``OneThreadExecutor``'s, a `Thread`),
/// never on a thread of the concurrency pool: it spins until every party has arrived.
public final class StartLine: Sendable {
  private let parties: Int
  private let arrived = Atomic(0)

  /// A start line for `parties` threads.
  public init(parties: Int) {
    self.parties = parties
  }

  /// Spins until all the parties have arrived (a second at most, so that one that never
  /// comes cannot hang the test), then a random number of rounds out of `jitter` more.
  public func go(jitter: ClosedRange<Int> = 0...1_000) {
    arrived.add(1, ordering: .sequentiallyConsistent)
    let deadline = ContinuousClock.now.advanced(by: .seconds(1))
    var spins = 0
    while arrived.load(ordering: .sequentiallyConsistent) < parties {
      spins += 1
      // On a busy machine the others may be waiting for a core: let them have it.
      if spins.isMultiple(of: 1 << 18) {
        if ContinuousClock.now >= deadline { break }
        sched_yield()
      }
    }
    // Each round is an atomic load, so the compiler cannot drop the loop.
    for _ in 0..<Int.random(in: jitter) { _ = arrived.load(ordering: .relaxed) }
  }
}
