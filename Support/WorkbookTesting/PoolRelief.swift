import Synchronization

/// What a test can undo to free threads that the code under test blocked: the write end of
/// a pipe a blocking read waits on, say.
///
/// When the pool's watchdog finds every thread it watches blocked (see
/// ``withPoolOfOne(_:patience:sourceLocation:_:)`` and `PoolStallWatch`), the finding is
/// recorded by the waiting test's task, which needs a thread to run. A read blocked on a
/// pipe the test owns never returns by itself, so the run would hang until the runner stops
/// it. Each registered relief runs once, on the watchdog's thread, right after the
/// finding: the reads see the end of their input, the threads come back, and the tests go
/// on to record what blocked them.
public enum PoolRelief {
  private static let reliefs = Mutex<[@Sendable () -> Void]>([])

  /// Adds `relief`, to run once if the pool is found blocked.
  public static func register(_ relief: @escaping @Sendable () -> Void) {
    reliefs.withLock { $0.append(relief) }
  }

  /// Runs every relief registered so far, once.
  static func runAll() {
    let all = reliefs.withLock { reliefs in
      defer { reliefs = [] }
      return reliefs
    }
    for relief in all { relief() }
  }
}
