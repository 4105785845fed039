import Foundation
import Synchronization

/// A task executor with a thread of its own that runs a hook on the thread that enqueues a
/// job, when that thread is another one: when a task listening here is resumed by a value a
/// stream yields, the hook runs inside that `yield`, on the producer's thread, at the very
/// step where the producer hands the value over.
///
/// Its thread lives as long as the process, as ``OneThreadExecutor``'s does.
final class HookedExecutor: TaskExecutor, @unchecked Sendable {
  // @unchecked: `jobs` is guarded by `condition`; the rest are `let`s of Sendable types
  // (and `thread`, set once in init, before any job can come).
  private let condition = NSCondition()
  private var jobs: [UnownedJob] = []
  private let hook = Mutex<(@Sendable () -> Void)?>(nil)
  private var thread: Thread?

  init() {
    let thread = Thread { [self] in serve() }
    thread.name = "HookedExecutor"
    self.thread = thread
    thread.start()
  }

  /// Runs `hook` once, the next time a job is enqueued from another thread.
  func whenEnqueuedFromElsewhere(_ hook: @escaping @Sendable () -> Void) {
    self.hook.withLock { $0 = hook }
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let hook = Thread.current !== thread ? self.hook.withLock { $0.take() } : nil
    condition.lock()
    jobs.append(job)
    condition.signal()
    condition.unlock()
    // After the job is queued (waking this executor's thread is slow and uneven), so the
    // enqueuing thread goes on at once when the hook returns.
    hook?()
  }

  private func serve() {
    let me = asUnownedTaskExecutor()
    while true {
      condition.lock()
      while jobs.isEmpty { condition.wait() }
      let job = jobs.removeFirst()
      condition.unlock()
      job.runSynchronously(on: me)
    }
  }
}
