import Foundation
import Synchronization

/// Notices, from a thread of its own, when no task of the whole process can run: every
/// thread of Swift's concurrency pool is blocked at once.
///
/// A blocking call inside a task (a read, a semaphore, `Thread.sleep`) in each of two tests
/// on two cores holds the whole pool; then no test can even start the check that would
/// name it (``withPoolOfOne(_:patience:sourceLocation:_:)`` needs a thread to join), and the
/// run hangs until the runner stops it. So this watch sends the pool a small probe task
/// every 100 ms; when one has not run after 3 seconds of time in which the watch itself
/// could run (a starved machine does not count, see ``RunnableTime``), it writes the finding
/// to stderr for the runner (see `announceBlocked`), once. Only when the runner asks for
/// explanations (`WORKBOOK_EXPLAIN`), and never while a test holds the pool on purpose
/// (``withoutPoolCheck(_:)``).
enum PoolStallWatch {
  private static let started = Atomic(false)
  private static let probesRun = Atomic(0)

  /// How long no probe may run before the pool counts as stalled.
  static let patience: Duration = .seconds(3)

  /// Starts the watch, once per process; later calls do nothing.
  static func start() {
    // Cheap after the first call: `eventually` calls this in its loops.
    guard !started.load(ordering: .acquiring),
      !started.exchange(true, ordering: .acquiringAndReleasing),
      ProcessInfo.processInfo.environment["WORKBOOK_EXPLAIN"] != nil
    else { return }
    let thread = Thread {
      ReorderedJobs.markThisThreadAsWatchdog()
      watch()
    }
    thread.name = "workbook-stall-watch"
    thread.start()
  }

  private static func watch() {
    var sent = 0
    // Only runnable time counts (no cap): a starved machine is not a blocked pool.
    var waited = RunnableTime(patience, slice: .milliseconds(100))
    while true {
      if probesRun.load(ordering: .acquiring) == sent {
        sent += 1
        waited = RunnableTime(patience, slice: .milliseconds(100))
        Task.detached { probesRun.add(1, ordering: .releasing) }
      }
      waited.sleepOneSliceBlockingThisThread()
      if waited.counted >= patience, probesRun.load(ordering: .acquiring) < sent,
        !SharedSqueeze.shared.isHeldOnPurpose
      {
        announceBlocked(stalledMessage, test: nil)
        PoolRelief.runAll()
        return
      }
    }
  }

  static let stalledMessage =
    "\(poolBlockedMarker) no task could run for \(describe(patience)): every thread of "
    + "Swift's concurrency pool was blocked at once, so even the tests stopped. Likely "
    + "cause: a blocking call in async code (a read such as readData(ofLength:) or "
    + "availableData, a semaphore, a dispatch group's wait, Thread.sleep), in a task or in "
    + "one it started (Task.detached too); suspend instead, or block only a Thread of your "
    + "own."
}
