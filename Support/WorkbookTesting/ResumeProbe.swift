import Dispatch
import Foundation
import Synchronization

/// A task executor that lets a test act at the one moment a race needs: while a suspended
/// task is being resumed, on the thread that resumes it, before that task, or the code that
/// resumed it, can go on.
///
/// Check-then-act mistakes hide in a gap of nanoseconds (a cache entry updated just after
/// the waiters were resumed, say), so a test that only races threads catches them once in
/// a thousand runs. A task run with this executor as its preference
/// (`Task(executorPreference: probe) { … }`) is resumed through ``enqueue(_:)``, which the
/// runtime calls inside `resume`, on the resuming thread. An armed probe runs right there:
/// the resumer is held in its `resume` call until the probe returns, so whatever the probe
/// does (ask the code under test again, cancel something) lands in the gap, every run.
///
/// Jobs run on Dispatch's global queue, any number at once, like the default executor.
/// Arm the probe only once the task is suspended: its first job (the task starting) goes
/// through ``enqueue(_:)`` too.
public final class ResumeProbeExecutor: TaskExecutor, Sendable {
  private struct Probe {
    var when: @Sendable () -> Bool
    var run: @Sendable () -> Void
  }

  private let armed = Mutex<Probe?>(nil)
  private let hold = Mutex<(@Sendable () -> Bool)?>(nil)
  private let probesRun = Atomic(0)

  public init() {}

  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    // Taken out under the lock, so that only one resume runs it.
    let probe = armed.withLock { armed -> Probe? in
      guard let probe = armed, probe.when() else { return nil }
      armed = nil
      return probe
    }
    if let probe {
      probe.run()
      probesRun.add(1, ordering: .relaxed)
    }
    // Counted before the job is queued: once it runs, the task may end, and the test read
    // the count, at once. Nor is `self` touched after that: the runtime holds its executor
    // unowned, and the test may let it go as soon as the task has ended.
    let released = hold.withLock { $0.take() }
    if released != nil { probesRun.add(1, ordering: .relaxed) }
    let executor = asUnownedTaskExecutor()
    DispatchQueue.global().async { job.runSynchronously(on: executor) }
    if let released { _ = waitOnThisThread(upTo: .seconds(1), until: released) }
  }

  /// The next time a task with this executor as its preference is resumed, holds the
  /// resuming thread in its `resume` call, after the task is queued, until `released` holds
  /// (for at most a second): the task goes on while the code that resumed it waits, so
  /// whatever that code does after resuming (let go of a delegate, say) comes after, every
  /// run. Counts in ``probesFired``.
  public func holdNextResumer(until released: @escaping @Sendable () -> Bool) {
    hold.withLock { $0 = released }
  }

  /// Runs `probe` once, the next time a task with this executor as its preference is
  /// enqueued (resumed) while `condition` holds (checked on the resuming thread, say "the
  /// thread the test completes the download on"), on that thread and before the task is
  /// queued.
  public func onNextResume(
    when condition: @escaping @Sendable () -> Bool = { true },
    _ probe: @escaping @Sendable () -> Void
  ) {
    armed.withLock { $0 = Probe(when: condition, run: probe) }
  }

  /// How many probes have run: 0 when the resume the test waited for never came.
  public var probesFired: Int { probesRun.load(ordering: .relaxed) }
}

/// Blocks the calling thread until `condition` holds, checking every 100 µs for at most
/// `limit`; says whether it held.
///
/// For a probe that holds a resumer (see ``ResumeProbeExecutor``) or a fake's callback
/// thread while another party gets as far as the test needs. Never call it on a thread of
/// the concurrency pool: the party it waits for may need that thread.
public func waitOnThisThread(upTo limit: Duration, until condition: () -> Bool) -> Bool {
  let clock = ContinuousClock()
  let deadline = clock.now.advanced(by: limit)
  while !condition() {
    if clock.now >= deadline { return condition() }
    usleep(100)
  }
  return true
}
