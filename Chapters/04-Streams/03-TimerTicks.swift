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
  // TODO: Turn the timer's firings into ticks, as documented above: numbered from 1, only the
  // newest for a slow consumer, the timer cancelled when the iteration ends, and the stream
  // ended when somebody else cancels the timer.
  AsyncStream { continuation in
    continuation.finish()
  }
}
