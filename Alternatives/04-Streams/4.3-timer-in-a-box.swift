import Dispatch
import LegacyKit
import Synchronization

// An alternative to the solution: the timer and the firing count kept in one small class,
// `@unchecked Sendable` because Dispatch sources are thread-safe, instead of a
// `nonisolated(unsafe)` local and a separate counter.

/// One firing of a timer.
struct Tick: Equatable, Sendable {
  var number: Int
  var firedAt: ContinuousClock.Instant
}

/// The ticks of `timer`, firing every `interval` from one interval from now, for as long as
/// the caller iterates.
func ticks(of timer: any DispatchSourceTimer, every interval: Duration) -> AsyncStream<Tick> {
  AsyncStream(Tick.self, bufferingPolicy: .bufferingNewest(1)) { continuation in
    let ticker = Ticker(timer)
    continuation.onTermination = { _ in ticker.stop() }
    ticker.start(every: interval) { tick in
      continuation.yield(tick)
    } cancelled: {
      continuation.finish()
    }
  }
}

private final class Ticker: @unchecked Sendable {
  private let timer: any DispatchSourceTimer
  private let fired = Mutex(0)

  init(_ timer: any DispatchSourceTimer) { self.timer = timer }

  func start(
    every interval: Duration, _ tick: @escaping @Sendable (Tick) -> Void,
    cancelled: @escaping @Sendable () -> Void
  ) {
    timer.setEventHandler {
      let number = self.fired.withLock { count in
        count += 1
        return count
      }
      tick(Tick(number: number, firedAt: .now))
    }
    timer.setCancelHandler(handler: cancelled)
    timer.schedule(deadline: .now() + interval.timeInterval, repeating: interval.timeInterval)
    timer.activate()
  }

  func stop() { timer.cancel() }
}
