import Foundation
import LegacyKit
import Synchronization

/// Runs `body` while the jobs that plain threads (callbacks, delegate queues, coroutines:
/// any thread not running a task) send to the global executor are held for `window` and
/// then sent on in the reverse order.
///
/// Code that hands each event of a callback to a task of its own (`Task { yield(event) }`)
/// relies on those tasks running in the order they were made, which Swift never promises:
/// on a busy machine they overtake each other, but on a quiet one almost never, so a test
/// of order passes by luck. Here every burst of such tasks runs backwards, so the order is
/// lost on every run. A correct bridge, which passes each event on in its callback, is not
/// affected: its listener has at most one job waiting at a time, and a job held a few
/// milliseconds changes nothing but when it runs.
///
/// Process-wide while any caller is inside: reversing jobs of independent tasks is a
/// schedule the runtime could choose by itself, so other tests running meanwhile see only
/// a short delay. A burst is held for the longest window of the callers inside, and a
/// caller that leaves sends on everything held at once (still backwards).
public func withPlainThreadJobsReordered<T>(
  window: Duration = .milliseconds(5), _ body: () async throws -> T
) async rethrows -> T {
  GlobalEnqueueHook.installOnce()
  ReorderedJobs.enter(window: window)
  defer { ReorderedJobs.leave(window: window) }
  return try await body()
}

/// How many jobs ``withPlainThreadJobsReordered(window:_:)`` holds at this moment, from
/// every caller inside: a test that waits for a callback's thread to hand a result to a task
/// sees here that the hand-over happened and the task has not run on yet.
public func plainThreadJobsHeld() -> Int {
  ReorderedJobs.heldCount
}

/// The held jobs, and the windows of the callers inside.
enum ReorderedJobs {
  private struct Held: @unchecked Sendable {  // an UnownedJob is a pointer the runtime owns
    var jobs: [UnownedJob] = []
    /// The window of each caller inside: a burst is held for the longest.
    var windows: [Duration] = []
    var original: GlobalEnqueueHook.Original?
    /// Counts the bursts sent on, so that a burst's timer does not cut the next one short.
    var released = 0
  }

  private static let state = Mutex(Held())
  private static let releaser = DispatchQueue(label: "workbook.reordered-jobs")

  static var heldCount: Int { state.withLock { $0.jobs.count } }

  static func enter(window: Duration) {
    state.withLock { $0.windows.append(window) }
  }

  static func leave(window: Duration) {
    state.withLock { held in
      if let index = held.windows.firstIndex(of: window) { held.windows.remove(at: index) }
    }
    // Nothing this caller held may wait longer than it is inside, and the timer of a burst
    // may have been set by its long window: send on what is held now (still backwards).
    release()
  }

  /// Holds `job` if reordering is on and it comes from a thread that is not running a
  /// task; says whether it did.
  static func hold(_ job: UnownedJob, original: GlobalEnqueueHook.Original) -> Bool {
    guard withUnsafeCurrentTask(body: { $0 == nil }) else { return false }
    guard state.withLock({ !$0.windows.isEmpty }), !isWatchdogThread() else { return false }
    let (held, burst, window) = state.withLock { held -> (Bool, Int?, Duration) in
      guard let window = held.windows.max() else { return (false, nil, .zero) }
      held.original = original
      held.jobs.append(job)
      return (true, held.jobs.count == 1 ? held.released : nil, window)
    }
    if let burst {
      releaser.asyncAfter(deadline: .now() + window.timeInterval) { release(burst: burst) }
    }
    return held
  }

  private static let watchdogKey = "workbook.watchdog"

  /// Marks the calling thread as one of the test support's own watchdogs: the probes and
  /// holds they send to the pool are never held back, or a reordering test elsewhere in the
  /// process would look to them like a blocked pool.
  static func markThisThreadAsWatchdog() {
    Thread.current.threadDictionary[watchdogKey] = true
  }

  private static func isWatchdogThread() -> Bool {
    Thread.current.threadDictionary[watchdogKey] != nil
  }

  /// Sends every held job on, the last held first; with `burst`, only if that burst is
  /// still the one held.
  private static func release(burst: Int? = nil) {
    let (jobs, original) = state.withLock { held -> ([UnownedJob], GlobalEnqueueHook.Original?) in
      guard !held.jobs.isEmpty, burst == nil || burst == held.released else { return ([], nil) }
      defer {
        held.jobs = []
        held.released += 1
      }
      return (held.jobs, held.original)
    }
    guard let original else { return }
    for job in jobs.reversed() { original(job) }
  }
}
