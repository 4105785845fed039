import Dispatch
import Foundation
import Synchronization

/// Runs `body` once, soon, on another thread chosen at random: a global dispatch queue of
/// some quality of service right away, or a thread of its own after a random delay of at
/// most `maxDelay`.
///
/// For stress tests: legacy code calls back from wherever it likes, and a bridge must be
/// right whichever thread wins. Keep `body` short: on Linux the global queues' few threads
/// also run Swift's tasks. And no dispatch timers (`asyncAfter`): thousands of tiny ones
/// hold up the one timer thread that every `Task.sleep` in the process also waits on.
public func onRandomThread(
  within maxDelay: Duration = .microseconds(200), _ body: @escaping @Sendable () -> Void
) {
  if Bool.random() {
    let qos = [DispatchQoS.QoSClass.userInitiated, .default, .utility].randomElement()!
    DispatchQueue.global(qos: qos).async(execute: body)
  } else {
    let microseconds = Int.random(in: 0...max(0, Int(maxDelay / .microseconds(1))))
    Thread {
      if microseconds > 0 { usleep(UInt32(microseconds)) }
      body()
    }.start()
  }
}

/// Counts arrivals from any thread; ``reached()`` returns once there have been `count`.
///
/// Await it inside ``withDeadline(_:_:hint:sourceLocation:_:)``, so that arrivals that never
/// come fail the test instead of hanging it.
public final class Countdown: Sendable {
  private struct State {
    var remaining: Int
    var waiters: [CheckedContinuation<Void, Never>] = []
  }

  private let state: Mutex<State>

  public init(_ count: Int) {
    state = Mutex(State(remaining: count))
  }

  /// How many arrivals are still to come.
  public var remaining: Int { state.withLock { $0.remaining } }

  /// One more has arrived.
  public func arrive() {
    let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.remaining -= 1
      guard state.remaining <= 0 else { return [] }
      defer { state.waiters.removeAll() }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Returns once every arrival has come.
  public func reached() async {
    await withCheckedContinuation { continuation in
      let done = state.withLock { state in
        if state.remaining > 0 { state.waiters.append(continuation) }
        return state.remaining <= 0
      }
      if done { continuation.resume() }
    }
  }
}
