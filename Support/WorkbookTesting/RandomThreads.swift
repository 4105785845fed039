import Dispatch
import Foundation
import Synchronization

/// Runs `body` once, soon, on another thread chosen at random, after a random delay of at
/// most `maxDelay`: a global dispatch queue of some quality of service, right away or after
/// the delay, or a thread of its own that sleeps first.
///
/// For stress tests: legacy code calls back from wherever it likes, and a bridge must be
/// right whichever thread wins. Keep `body` short: on Linux the global queues' few threads
/// also run Swift's tasks, so a long loop belongs on a `Thread` of its own.
public func onRandomThread(
  within maxDelay: Duration = .microseconds(200), _ body: @escaping @Sendable () -> Void
) {
  let microseconds = Int.random(in: 0...max(0, Int(maxDelay / .microseconds(1))))
  let qos = [DispatchQoS.QoSClass.userInitiated, .default, .utility].randomElement()!
  // Never sleeps on a global queue's thread: that would hold up the tasks it also runs.
  switch Int.random(in: 0..<3) {
  case 0:
    DispatchQueue.global(qos: qos).async(execute: body)
  case 1:
    DispatchQueue.global(qos: qos).asyncAfter(
      deadline: .now() + .microseconds(microseconds), execute: body)
  default:
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
