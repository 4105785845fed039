import Foundation
import LegacyKit
import Synchronization
import Testing

/// A task executor with one thread of its own: what a one-core device, or the main thread,
/// gives an async function.
///
/// Tests run the learner's function on it to see whether it suspends or blocks, on any
/// number of cores. A legacy callback scripted with ``LegacyKit/CallbackScript/onThreadOf(_:times:)``
/// runs as a job on the same thread, queued behind whatever runs there, as a framework that
/// calls back on the main queue does: a function that waits for that callback by blocking
/// the thread (a semaphore, a dispatch group, `waitUntilExit()`) never lets it run.
///
/// The executor counts the jobs it runs and how long the longest one held the thread, so a
/// test can also tell a single suspension from a polling loop. Its thread lives as long as
/// the process: a job that blocks forever only blocks this executor.
public final class OneThreadExecutor: TaskExecutor, @unchecked Sendable {
  // @unchecked: every stored property below is guarded by `condition`.
  private let condition = NSCondition()
  private var queue: [Item] = []
  private var runningSince: ContinuousClock.Instant?
  private var jobs = 0
  private var longest: Duration = .zero
  private var onEnqueueFromElsewhere: (@Sendable () -> Void)?
  private var thread: Thread?

  public init() {
    let thread = Thread { [self] in serve() }
    thread.name = "OneThreadExecutor"
    self.thread = thread
    thread.start()
  }

  // MARK: TaskExecutor

  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    condition.lock()
    // Taken here, under the lock, so that only one enqueue ever runs it.
    var hook: (@Sendable () -> Void)?
    if Thread.current !== thread, runningSince == nil, jobs > 0 {
      hook = onEnqueueFromElsewhere
      onEnqueueFromElsewhere = nil
    }
    condition.unlock()
    // On the enqueuing thread, inside whatever called `enqueue` (a `resume`, say), and
    // before the job is queued, so the resumed task cannot run on until the hook returns.
    hook?()
    condition.lock()
    queue.append(.job(job))
    condition.signal()
    condition.unlock()
  }

  // MARK: What tests use

  /// Runs `work` on this executor's thread, after the jobs queued before it.
  public func schedule(_ work: @escaping @Sendable () -> Void) {
    condition.lock()
    queue.append(.work(work))
    condition.signal()
    condition.unlock()
  }

  /// A scheduler for ``LegacyKit/CallbackScript``: callbacks run on this thread.
  public var scheduler: CallbackScheduler {
    CallbackScheduler(name: "the caller's one thread") { [self] work in schedule(work) }
  }

  /// How many jobs (task steps) have started here: a function that suspends once runs in
  /// two, one before it suspends and one after it is resumed.
  public var jobsRun: Int {
    condition.lock()
    defer { condition.unlock() }
    return jobs
  }

  /// The longest time one job held the thread, counting a job that is still running.
  public var longestJob: Duration {
    condition.lock()
    defer { condition.unlock() }
    let current = runningSince.map { ContinuousClock.now - $0 } ?? .zero
    return max(longest, current)
  }

  /// How long the job running now has held the thread; `nil` when the thread is idle.
  public var currentJobAge: Duration? {
    condition.lock()
    defer { condition.unlock() }
    return runningSince.map { ContinuousClock.now - $0 }
  }

  /// Calls `hook` once, on the enqueuing thread and before the job is queued, the next time
  /// a job is enqueued from another thread while this one is idle after running a job: that
  /// is, when a suspended task on this executor is resumed from elsewhere (the resumer is
  /// still inside `resume`).
  func whenResumedFromElsewhere(_ hook: @escaping @Sendable () -> Void) {
    condition.lock()
    onEnqueueFromElsewhere = hook
    condition.unlock()
  }

  // MARK: The thread

  private enum Item {
    case job(UnownedJob)
    case work(@Sendable () -> Void)
  }

  /// The thread's loop, first in, first out. It never ends: the thread keeps the executor.
  private func serve() {
    let me = asUnownedTaskExecutor()
    while true {
      condition.lock()
      while queue.isEmpty { condition.wait() }
      let started = ContinuousClock.now
      runningSince = started
      let item = queue.removeFirst()
      if case .job = item { jobs += 1 }
      condition.unlock()

      switch item {
      case .job(let job):
        job.runSynchronously(on: me)
      case .work(let work):
        work()
      }

      condition.lock()
      runningSince = nil
      if case .job = item { longest = max(longest, ContinuousClock.now - started) }
      condition.unlock()
    }
  }
}

extension CallbackScript {
  /// Calls back `times` times on `executor`'s one thread, behind whatever runs there.
  public static func onThreadOf(_ executor: OneThreadExecutor, times: Int = 1) -> CallbackScript {
    CallbackScript(timing: .scheduled(executor.scheduler), times: times)
  }
}

/// Runs `operation` as a task on a one-thread executor and, the first time the task is
/// resumed from another thread, cancels it from a third thread while the resumer is still
/// inside `resume`.
///
/// This makes a deadlock that real programs hit only now and then happen every time, and
/// safely. If the code that resumes holds a lock that the operation's `onCancel` handler
/// also takes, `cancel()` cannot finish (its `onCancel` waits for that lock); after
/// `patience` the probe gives up, lets the resumer go on, and records a failure naming the
/// cause. With the runtime, that order deadlocks for good: the cancelling thread holds the
/// task's status lock while `onCancel` waits for your lock, and `resume` waits for the
/// status lock.
///
/// The task is cancelled right after it is resumed, so a correct operation may return what
/// it was resumed with or throw `CancellationError`; the test decides which it accepts.
/// The resume must come from another thread than the task's (a legacy callback on a
/// background queue, or a test that completes something after the operation suspended).
public func withCancellationRacingResume<T: Sendable>(
  _ limit: Duration = .seconds(2),
  _ operationName: String,
  hint: String = "a path through your code never resumes its continuation",
  patience: Duration = .seconds(1),
  sourceLocation: SourceLocation = #_sourceLocation,
  _ operation: sending @escaping () async throws -> T
) async throws -> T {
  let executor = OneThreadExecutor()
  let blocked = Atomic(false)
  let task = Task(executorPreference: executor) { try await operation() }
  executor.whenResumedFromElsewhere {
    let cancelled = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      task.cancel()
      cancelled.signal()
    }
    if cancelled.wait(timeout: .now() + patience.timeInterval) == .timedOut {
      blocked.store(true, ordering: .relaxed)
    }
  }
  let result = await Result(catching: {
    try await withDeadline(limit, operationName, hint: hint, sourceLocation: sourceLocation) {
      try await task.value
    }
  })
  if blocked.load(ordering: .relaxed) {
    Findings.record(
      lockHeldResumeMessage(operationName, patience: patience), at: sourceLocation)
  }
  if case .failure = result { task.cancel() }
  return try result.get()
}

/// Cancels `task` from a thread of its own and waits up to `patience` for `cancel()` to
/// return; returns false, after recording the cause, when it does not.
///
/// For tests that race cancellations against resumes many times over: with a resume made
/// under the lock that `onCancel` takes, the race can deadlock for good, and a `cancel()`
/// called on the test's own thread would then hang the test until the runner's time limit.
@discardableResult
public func cancelOrReportLockedResume<Success, Failure>(
  _ task: Task<Success, Failure>, _ operationName: String, patience: Duration = .seconds(1),
  sourceLocation: SourceLocation = #_sourceLocation
) -> Bool {
  let cancelled = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    task.cancel()
    cancelled.signal()
  }
  guard cancelled.wait(timeout: .now() + patience.timeInterval) == .timedOut else { return true }
  Findings.record(
    lockHeldResumeMessage(operationName, patience: patience), at: sourceLocation)
  return false
}

/// What the learner did when a cancellation could not get past their lock during a resume.
func lockHeldResumeMessage(_ operationName: String, patience: Duration) -> String {
  "\(operationName) resumed its continuation while holding the lock that its onCancel "
    + "handler takes: the task was cancelled from another thread during that resume, and "
    + "cancel() could not finish within \(describe(patience)) because onCancel waited for "
    + "the lock. With the Swift runtime this can deadlock for good: the cancelling thread "
    + "holds the task's status lock while onCancel waits for your lock, and your resume waits "
    + "for the status lock. Take the continuation out under the lock, release the lock, then "
    + "resume."
}
