import Dispatch
import Synchronization

/// A task executor that counts, while it watches, the jobs it is handed from inside a
/// callback and from anywhere else.
///
/// A task waiting on a stream, a continuation or a lock is handed back to its executor by
/// whoever lets it go on, on that caller's thread. Run the waiting loop on a `WakeWatch`
/// and it says where each value it waited for was passed on: in the callback that produced
/// it, or later, by a task or a queue the callback handed it to. Work handed on like that may
/// run in any order; whether it did on one run is chance, where it came from is not.
public final class WakeWatch: TaskExecutor, Sendable {
  private struct Counts {
    var watching = false
    var fromInside = 0
    var fromElsewhere = 0
  }

  private let isInside: @Sendable () -> Bool
  private let queue = DispatchQueue(label: "WakeWatch")
  private let counts = Mutex(Counts())

  /// - Parameter isInside: Whether the calling thread is inside the callback right now.
  public init(inside isInside: @escaping @Sendable () -> Bool) {
    self.isInside = isInside
  }

  /// Jobs handed over from inside the callback while watching.
  public var fromInside: Int { counts.withLock { $0.fromInside } }
  /// Jobs handed over from anywhere else while watching.
  public var fromElsewhere: Int { counts.withLock { $0.fromElsewhere } }

  /// Runs `body` on this executor, counting the jobs it is handed meanwhile. The count
  /// starts once the task runs here, so the hop onto the executor is not counted: what is,
  /// is each time a wait of `body` ends.
  public func counting(
    isolation: isolated (any Actor)? = #isolation, _ body: () async -> Void
  ) async {
    await withTaskExecutorPreference(self) {
      counts.withLock { $0.watching = true }
      await body()
      counts.withLock { $0.watching = false }
    }
  }

  public func enqueue(_ job: consuming ExecutorJob) {
    let inside = isInside()
    counts.withLock { counts in
      guard counts.watching else { return }
      if inside { counts.fromInside += 1 } else { counts.fromElsewhere += 1 }
    }
    let job = UnownedJob(job)
    queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
  }
}
