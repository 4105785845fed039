import Dispatch
import Foundation
import Synchronization

/// A task executor that can hold up the thread that resumes a task waiting on it.
///
/// Resuming a continuation enqueues the waiting task on its executor, on the resuming
/// thread and inside the call to `resume`. So when a task prefers this executor, the first
/// resume after ``arm(holdingUntil:)`` stays inside `resume` until the condition holds (or
/// a second passes). A wrapper that marks itself "resumed" only after `resume` returns is
/// then still unmarked while the other callers check it, every time, on any number of
/// cores: the race it loses is forced, not hoped for.
final class ResumeGate: TaskExecutor, Sendable {
  private struct State {
    var jobsFinished = 0
    var hold: (@Sendable () -> Bool)?
    var held = 0
    var timedOut = 0
  }

  private let queue = DispatchQueue(label: "ResumeGate")
  private let state = Mutex(State())

  /// How many jobs have run to their end (a job ends when the task suspends or returns).
  var jobsFinished: Int { state.withLock { $0.jobsFinished } }
  /// How many resumes were held up.
  var held: Int { state.withLock { $0.held } }
  /// How many held resumes were let go because the condition still did not hold after a
  /// second: the other callers were stuck behind the one inside `resume`.
  var timedOut: Int { state.withLock { $0.timedOut } }

  /// Holds up the next enqueue (the next resume of the waiting task) until `condition`
  /// holds, for at most one second.
  func arm(holdingUntil condition: @escaping @Sendable () -> Bool) {
    state.withLock { $0.hold = condition }
  }

  /// Waits, blocking this thread for at most `limit`, until `count` jobs have finished.
  @discardableResult
  func waitForJobs(_ count: Int, atMost limit: Duration = .seconds(2)) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: limit)
    while jobsFinished < count {
      guard clock.now < deadline else { return false }
      usleep(50)
    }
    return true
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let hold = state.withLock { state -> (@Sendable () -> Bool)? in
      guard let hold = state.hold.take() else { return nil }
      state.held += 1
      return hold
    }
    if let hold {
      let clock = ContinuousClock()
      let deadline = clock.now.advanced(by: .seconds(1))
      while !hold() {
        guard clock.now < deadline else {
          state.withLock { $0.timedOut += 1 }
          break
        }
        usleep(50)
      }
    }
    queue.async {
      job.runSynchronously(on: self.asUnownedTaskExecutor())
      self.state.withLock { $0.jobsFinished += 1 }
    }
  }
}

/// Blocks the calling thread until `count` threads have called it, then lets them all go
/// at once. Spins rather than sleeps, so the threads leave as close together as the
/// machine allows.
final class Barrier: Sendable {
  private let count: Int
  private let arrived = Atomic(0)

  init(_ count: Int) {
    self.count = count
  }

  func arriveAndWait() {
    arrived.add(1, ordering: .sequentiallyConsistent)
    while arrived.load(ordering: .sequentiallyConsistent) < count {
      sched_yield()
    }
  }
}
