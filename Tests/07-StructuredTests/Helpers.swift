import Dispatch
import Synchronization

/// A task executor with one serial queue that can tell whether the job it runs has held its
/// thread for long: code that should suspend but blocks (`Thread.sleep`, `usleep`, a
/// semaphore) shows up as one long job.
final class WatchedExecutor: TaskExecutor {
  private let queue = DispatchQueue(label: "workbook.tests.watched")
  /// When the job running now started, in nanoseconds of the continuous clock; 0 if none.
  private let jobStarted = Atomic<Int64>(0)
  private let origin = ContinuousClock.now

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    queue.async {
      self.jobStarted.store(self.elapsed(), ordering: .sequentiallyConsistent)
      job.runSynchronously(on: self.asUnownedTaskExecutor())
      self.jobStarted.store(0, ordering: .sequentiallyConsistent)
    }
  }

  /// How long the job running now has held the thread, if one is running.
  var currentJobDuration: Duration? {
    let started = jobStarted.load(ordering: .sequentiallyConsistent)
    guard started != 0 else { return nil }
    return .nanoseconds(elapsed() - started)
  }

  /// True if a job has held the thread for at least `limit`.
  func isBlocked(for limit: Duration) -> Bool {
    (currentJobDuration ?? .zero) >= limit
  }

  private func elapsed() -> Int64 {
    let (seconds, attoseconds) = (ContinuousClock.now - origin).components
    // Never 0 while a job runs: 0 means "no job".
    return max(1, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
  }
}
