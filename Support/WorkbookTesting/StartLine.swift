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

/// Runs `body` when no other stress test of this process is running one, so that two of
/// them (each spinning two threads of its own) do not fight over the cores: the tests of a
/// suite run at the same time, and a stress that cannot get its threads onto the cores
/// together races nothing.
public func withOneStressAtATime<T>(_ body: () async throws -> T) async throws -> T {
  await StressLane.shared.enter()
  do {
    let value = try await body()
    await StressLane.shared.leave()
    return value
  } catch {
    await StressLane.shared.leave()
    throw error
  }
}

/// Races two threads of their own, round after round, for as long as the stress amount
/// says (`grading` in a learner's check, `verify` in the long form), one stress at a time;
/// stops early when `round` returns false, having recorded what it found.
///
/// Each round typically makes fresh objects, starts two parties on `left` and `right`
/// behind a ``StartLine``, and checks what they saw.
public func raceRounds(
  grading: Duration = .milliseconds(300), verify: Duration = .seconds(2),
  _ round: (_ left: OneThreadExecutor, _ right: OneThreadExecutor) async throws -> Bool
) async throws {
  let budget = stressAmount(grading: grading, verify: verify)
  let (left, right) = (OneThreadExecutor(), OneThreadExecutor())
  try await withOneStressAtATime {
    let clock = ContinuousClock()
    let start = clock.now
    while clock.now - start < budget {
      guard try await round(left, right) else { return }
    }
  }
}

/// The queue of stress tests waiting for their turn.
private actor StressLane {
  static let shared = StressLane()

  private var busy = false
  private var waiting: [CheckedContinuation<Void, Never>] = []

  func enter() async {
    guard busy else {
      busy = true
      return
    }
    // Handed the turn by `leave()`, which keeps `busy` set for us.
    await withCheckedContinuation { waiting.append($0) }
  }

  func leave() {
    if waiting.isEmpty {
      busy = false
    } else {
      waiting.removeFirst().resume()
    }
  }
}
