import Dispatch
import Foundation
import LegacyKit
import Synchronization
import WorkbookTesting

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

/// Watches the thread of a ``OneThreadExecutor`` from a thread of its own, and measures the
/// longest time one job spent asleep while it held that thread.
///
/// A task that suspends gives its thread back: the executor is idle, and nothing counts. A
/// job that sleeps on it (`usleep`, `Thread.sleep`, a semaphore, a dispatch group, a blocking
/// read) keeps it, however short the sleep. The kernel counts, per thread, the time spent
/// running and the time spent waiting for a processor (`/proc/…/schedstat`); between two
/// looks at the same job, the rest of the time that passed is time the job slept. A busy
/// machine that keeps the thread (or this watch) waiting for a processor therefore adds
/// nothing, and looks as far apart as the machine makes them still add up exactly.
final class SleepWatch: Sendable {
  private let longest = Mutex<Duration>(.zero)
  private let stopped = Atomic<Bool>(false)

  /// Starts watching `executor`'s thread.
  init(watching executor: OneThreadExecutor) async {
    let file: String? = await withCheckedContinuation { continuation in
      executor.schedule {
        // "/proc/thread-self" names this thread: "<pid>/task/<tid>".
        let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")
        continuation.resume(returning: path.map { "/proc/\($0)/schedstat" })
      }
    }
    guard let file else { return }
    Thread.detachNewThread { [self] in
      let clock = ContinuousClock()
      // The last look at a running job: which job, when, and the thread's times then.
      var last: (job: Int, at: ContinuousClock.Instant, ran: Int64, waited: Int64)?
      var asleep = Duration.zero
      while !stopped.load(ordering: .relaxed) {
        let job = executor.jobsRun
        let before = clock.now
        let times = Self.times(file)
        let after = clock.now
        let sameJob = executor.currentJobAge != nil && executor.jobsRun == job
        if let times, sameJob, after - before < .milliseconds(2) {
          if let last, last.job == job {
            let passed = after - last.at
            let ran = Duration.nanoseconds(times.ran - last.ran)
            let waited = Duration.nanoseconds(times.waited - last.waited)
            asleep += passed - ran - waited
            longest.withLock { $0 = max($0, asleep) }
          } else {
            asleep = .zero
          }
          last = (job, after, times.ran, times.waited)
        } else if !sameJob {
          last = nil
        }
        usleep(1_000)
      }
    }
  }

  /// The longest time one job was asleep on the thread so far.
  var longestSleep: Duration { longest.withLock { $0 } }

  /// Stops watching.
  func stop() { stopped.store(true, ordering: .relaxed) }

  /// The thread's time on a processor and time waiting for one, in nanoseconds.
  private static func times(_ file: String) -> (ran: Int64, waited: Int64)? {
    guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
    let fields = text.split(separator: " ").compactMap {
      Int64($0.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    guard fields.count >= 2 else { return nil }
    return (fields[0], fields[1])
  }
}

/// Callbacks that wait for the test: a script whose deliveries are held until ``release()``,
/// so that a cancel always comes before them, however busy the machine is. (A delivery
/// "100 ms later" races a cancel made after a check that the download started: a machine
/// that pauses the test for 100 ms lets the file win.)
final class HeldDeliveries: Sendable {
  private let state = Locked((released: false, held: [@Sendable () -> Void]()))

  /// Deliveries held until ``release()``; once released, each comes at once, on a
  /// background queue.
  var script: CallbackScript {
    CallbackScript(
      timing: .scheduled(
        CallbackScheduler(name: "when the test lets it") { [state] work in
          let now = state.withLock { state in
            if !state.released { state.held.append(work) }
            return state.released
          }
          if now { DispatchQueue.global().async(execute: work) }
        }))
  }

  /// How many deliveries are held.
  var count: Int { state.withLock { $0.held.count } }

  /// Lets every held delivery through, on a background queue, and every later one at once.
  func release() {
    let held = state.withLock { state in
      state.released = true
      defer { state.held = [] }
      return state.held
    }
    for work in held { DispatchQueue.global().async(execute: work) }
  }
}
