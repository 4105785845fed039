import Dispatch
import LegacyKit
import Synchronization

// An alternative to the solution: `makeStream(of:bufferingPolicy:)` instead of the closure
// initializer, an `Atomic` counter instead of a `Mutex`, and `resume()` (which activates a
// new source too) instead of `activate()`.

/// One firing of a timer.
struct Tick: Equatable, Sendable {
  var number: Int
  var firedAt: ContinuousClock.Instant
}

/// The ticks of `timer`, firing every `interval` from one interval from now, for as long as
/// the caller iterates.
func ticks(of timer: any DispatchSourceTimer, every interval: Duration) -> AsyncStream<Tick> {
  let (stream, continuation) = AsyncStream.makeStream(
    of: Tick.self, bufferingPolicy: .bufferingNewest(1))
  nonisolated(unsafe) let timer = timer
  let counter = Counter()
  continuation.onTermination = { _ in timer.cancel() }
  timer.setEventHandler {
    continuation.yield(Tick(number: counter.increment(), firedAt: .now))
  }
  timer.setCancelHandler { continuation.finish() }
  timer.schedule(deadline: .now() + interval.timeInterval, repeating: interval.timeInterval)
  timer.resume()
  return stream
}

private final class Counter: Sendable {
  private let value = Atomic(0)

  func increment() -> Int {
    value.add(1, ordering: .relaxed).newValue
  }
}
