import Dispatch
import Synchronization

/// A task executor with one serial queue, that knows when it has nothing left to run.
///
/// Tasks started on it run their code there up to their first suspension. Once it is idle,
/// every such task is suspended (or finished): a `receive()` started on it has stored its
/// continuation in the channel, a call has joined or subscribed to whatever it waits for.
/// That lets a test put waiters in a known order without guessing how long they take to
/// start, and without assuming how they wait.
public final class SettlingExecutor: TaskExecutor {
  private let queue = DispatchQueue(label: "workbook.tests.settling")
  /// Jobs enqueued and not yet finished. A job that enqueues another counts it before
  /// its own ends, so zero means that nothing runs now and nothing is about to.
  private let pending = Atomic<Int>(0)
  private let finished = Atomic<Int>(0)

  public init() {}

  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    pending.add(1, ordering: .sequentiallyConsistent)
    queue.async {
      job.runSynchronously(on: self.asUnownedTaskExecutor())
      self.finished.add(1, ordering: .sequentiallyConsistent)
      self.pending.subtract(1, ordering: .sequentiallyConsistent)
    }
  }

  /// True when no job is queued or running.
  public var isIdle: Bool { pending.load(ordering: .sequentiallyConsistent) == 0 }

  /// How many jobs have run to their end (each up to a suspension or the task's end).
  public var jobsRun: Int { finished.load(ordering: .sequentiallyConsistent) }
}
