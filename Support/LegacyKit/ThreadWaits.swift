import Foundation

/// How long the calling thread spends waiting while it runs a piece of code: asleep or
/// blocked (a sleep, a semaphore, a lock someone else holds, a blocking read), as opposed to
/// running or ready to run. A busy machine, which keeps a ready thread off the processor,
/// adds nothing, so a fake can tell "this callback made my thread wait" from "this machine
/// is slow".
///
/// Linux only: it reads the thread's scheduler statistics (`/proc/thread-self/schedstat`:
/// time on the processor and time ready to run). Elsewhere it measures nothing (zero), so
/// no fake ever blames a callback there for a wait it cannot see.
struct ThreadWaits {
  private static let clock = ContinuousClock()
  private let start: ContinuousClock.Instant
  private let busyAtStart: Duration?

  /// Starts measuring on the calling thread.
  init() {
    start = Self.clock.now
    busyAtStart = Self.busy()
  }

  /// The time the calling thread has spent waiting since `init`. Call it on the same thread.
  var waited: Duration {
    guard let busyAtStart, let busyNow = Self.busy() else { return .zero }
    let waited = (Self.clock.now - start) - (busyNow - busyAtStart)
    return max(waited, .zero)
  }

  /// The thread's time on the processor plus its time ready to run, so far.
  private static func busy() -> Duration? {
    #if os(Linux)
    guard let text = try? String(contentsOfFile: "/proc/thread-self/schedstat", encoding: .utf8)
    else { return nil }
    let fields = text.split(separator: " ").prefix(2).compactMap { Int64($0) }
    guard fields.count == 2 else { return nil }
    return .nanoseconds(fields[0] + fields[1])
    #else
    return nil
    #endif
  }
}
