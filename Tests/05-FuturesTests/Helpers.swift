import CoroutineKit
import Foundation
import LegacyKit
import Synchronization
import WorkbookTesting

/// A legacy future completed with `result` the way `script` says: synchronously (so it is
/// complete before anyone awaits it), soon or later from another thread, twice (the second
/// attempt is ignored, as a `CoPromise` ignores every later one), or never.
///
/// It is returned as the promise, so a test can also cancel it and ask whether it was.
func scriptedFuture<Value>(
  _ result: Result<Value, any Error>, _ script: CallbackScript
) -> CoPromise<Value> {
  let promise = CoPromise<Value>()
  script.deliver { promise.complete(with: result) }
  return promise
}

/// Runs `work` on `executor`'s thread once `jobs` jobs have started there: behind the
/// function under test, which is already running on that thread (or blocking it).
///
/// This is how a framework that calls back on the main queue treats a caller on the main
/// actor. A function that suspends frees the thread, and `work` runs; a function that blocks
/// the thread until `work` has run waits forever. Gives up after 5 seconds.
func completeOnThread(
  of executor: OneThreadExecutor, afterJobs jobs: Int, _ work: @escaping @Sendable () -> Void
) {
  Task.detached {
    _ = await eventually(within: .seconds(5)) { executor.jobsRun >= jobs }
    executor.schedule(work)
  }
}

/// Proves that some requests ran at the same time, without measuring how long anything took.
///
/// Each fake request calls `arrive()` when it starts and returns only after it: `arrive()`
/// waits until every one of the `parties` has arrived. If they all do, they were all running
/// at once. If the requests run one after another, the first one waits in vain: after
/// `patience` it gives up, and so does everyone after it, at once, so a sequential answer
/// fails the test quickly instead of hanging it.
final class Rendezvous: Sendable {
  private struct State {
    var arrived = 0
    var met = false
    var gaveUp = false
    /// How many had arrived when the first one gave up: how many ran together at most.
    var arrivedAtGiveUp: Int?
  }

  let parties: Int
  private let patience: Duration
  private let state = Mutex(State())

  init(parties: Int, patience: Duration = .seconds(1)) {
    self.parties = parties
    self.patience = patience
  }

  /// True if all the parties were there at the same time.
  var met: Bool { state.withLock { $0.met } }

  /// How many parties had arrived when the first one gave up waiting; nil if none did.
  var arrivedAtGiveUp: Int? { state.withLock { $0.arrivedAtGiveUp } }

  /// How many parties have arrived so far.
  var arrived: Int { state.withLock { $0.arrived } }

  func arrive() async {
    state.withLock { state in
      state.arrived += 1
      if state.arrived == parties && !state.gaveUp { state.met = true }
    }
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: patience)
    while true {
      let (met, gaveUp) = state.withLock { ($0.met, $0.gaveUp) }
      if met || gaveUp || Task.isCancelled { return }
      if clock.now >= deadline {
        state.withLock { state in
          if !state.gaveUp { state.arrivedAtGiveUp = state.arrived }
          state.gaveUp = true
        }
        return
      }
      try? await Task.sleep(for: .milliseconds(2))
    }
  }
}

/// Runs `body(thread, round)` on `threads` dedicated threads, up to `rounds` times each, and
/// starts every round on all the threads at the same moment: each thread spins on an atomic
/// counter until the others have arrived, so their calls really overlap (a lock or a
/// `DispatchGroup` would wake them one after another).
///
/// No round starts after `end`: on a busy machine a thread waits for its turn on a core at
/// every round, so a fixed number of rounds could take any time. Returns whether every
/// thread came back within 10 seconds of that (a call of `body` that never returns keeps
/// its thread), and how many rounds, from the first, every thread ran.
func onThreadsAtOnce(
  threads: Int, rounds: Int, startingNoRoundAfter end: ContinuousClock.Instant,
  _ body: @escaping @Sendable (_ thread: Int, _ round: Int) -> Void
) async -> (finished: Bool, roundsRun: Int) {
  let barrier = SpinBarrier(end: end)
  let finished = Locked(0)
  let roundsRunByEach = Locked([Int]())
  for thread in 0..<threads {
    Thread {
      var ran = 0
      for round in 0..<rounds {
        guard barrier.arriveAndWait(until: (round + 1) * threads) else { break }
        body(thread, round)
        ran += 1
      }
      roundsRunByEach.withLock { $0.append(ran) }
      finished.withLock { $0 += 1 }
    }.start()
  }
  let cameBack = await eventually(within: end - ContinuousClock.now + .seconds(10)) {
    finished.value == threads
  }
  return (cameBack, cameBack ? roundsRunByEach.value.min() ?? 0 : 0)
}

private final class SpinBarrier: Sendable {
  private let arrivals = Atomic(0)
  private let stopped = Atomic(false)
  private let end: ContinuousClock.Instant

  init(end: ContinuousClock.Instant) {
    self.end = end
  }

  /// Waits until `total` arrivals in all; false, at once, once a waiting thread has seen
  /// `end` pass (every thread then stops).
  func arriveAndWait(until total: Int) -> Bool {
    arrivals.add(1, ordering: .acquiringAndReleasing)
    // Spin hard, so that everyone leaves within nanoseconds of the last arrival; yield now
    // and then, so a thread waiting for a core does not starve the one it waits for.
    var spins = 0
    while arrivals.load(ordering: .acquiring) < total {
      if stopped.load(ordering: .acquiring) { return false }
      spins += 1
      if spins % 4096 == 0 {
        if ContinuousClock.now >= end {
          stopped.store(true, ordering: .releasing)
          return false
        }
        sched_yield()
      }
    }
    return true
  }
}
