import Dispatch
import LegacyKit
import Synchronization

// The Dispatch way, in a screen that refreshes a countdown every second:
//
//     timer.schedule(deadline: .now() + 1, repeating: 1)
//     timer.setEventHandler { [weak self] in
//       self?.refresh()
//     }
//     timer.resume()
//     …
//     deinit {
//       timer.cancel()
//     }

/// One firing of a timer.
struct Tick: Equatable, Sendable {
  /// 1 for the first firing, 2 for the second, and so on. Every firing counts, also the ones
  /// a slow consumer never sees.
  var number: Int
  /// When the timer fired.
  var firedAt: ContinuousClock.Instant
}

/// The ticks of `timer`, firing every `interval` from one interval from now, for as long as
/// the caller iterates: `for await tick in ticks(of: timer, every: .seconds(1)) { … }`.
///
/// A consumer slower than the timer gets the newest tick when it asks, never a backlog of old
/// ones. The timer is cancelled when the iteration ends, and the stream ends when somebody
/// else cancels the timer.
///
/// - Parameter timer: A new timer source, not activated yet.
func ticks(of timer: any DispatchSourceTimer, every interval: Duration) -> AsyncStream<Tick> {
  // A tick is news about *now*: one that waited in a buffer is stale. The default policy,
  // `.unbounded`, would keep every tick a slow consumer has not taken yet and hand them over
  // one by one, ever later. Keeping only the newest one means the consumer always gets the
  // latest firing, and memory stays constant however slow it is.
  AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
    // Dispatch sources are thread-safe, but `DispatchSourceTimer` is a protocol that does not
    // say so (it is not Sendable). `nonisolated(unsafe)` lets the `@Sendable` termination
    // handler capture it.
    nonisolated(unsafe) let timer = timer
    let firings = FiringCount()
    timer.setEventHandler {
      continuation.yield(Tick(number: firings.next(), firedAt: .now))
    }
    // If somebody else cancels the timer, no tick will ever come again: end the stream, or
    // the consumer waits forever.
    timer.setCancelHandler {
      continuation.finish()
    }
    // However the iteration ends, stop the timer. (Its cancel handler then finishes a stream
    // that has already ended, which does nothing.)
    continuation.onTermination = { _ in
      timer.cancel()
    }
    timer.schedule(deadline: .now() + interval.timeInterval, repeating: interval.timeInterval)
    // A new source is inactive: nothing fires until it is activated.
    timer.activate()
  }
}

/// Counts a timer's firings. Dispatch calls the event handler on the timer's queue, one call
/// at a time, but nothing tells the compiler so: the count is guarded.
private final class FiringCount: Sendable {
  private let count = Mutex(0)

  /// The number of this firing: 1 the first time, then 2, and so on.
  func next() -> Int {
    count.withLock { count in
      count += 1
      return count
    }
  }
}
