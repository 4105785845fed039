import Dispatch
import Foundation

/// When and how often a simulated legacy API calls its handler.
///
/// Real callback APIs are not polite: they call back on any thread, sometimes before the
/// call returns, sometimes twice, sometimes never. Every simulated framework in LegacyKit
/// takes a script so tests can make it behave each of those ways.
public struct CallbackScript: Sendable, CustomStringConvertible {
  /// Where the callback runs relative to the call that asked for it.
  public enum Timing: Sendable {
    /// Inside the call, on the caller's thread, before the call returns.
    case synchronously
    /// Soon, on a background queue: a different thread from the caller.
    case onBackgroundQueue
    /// After a delay, on a background queue.
    case after(Duration)
    /// Handed to a scheduler the test chooses, e.g. a test's one-thread executor, so the
    /// callback waits behind whatever runs there (as a callback on the main queue does).
    case scheduled(CallbackScheduler)
  }

  public var timing: Timing
  /// How many times the handler is called: 0 models a user who walks away.
  public var times: Int

  public init(timing: Timing = .onBackgroundQueue, times: Int = 1) {
    precondition(times >= 0, "a callback cannot be delivered a negative number of times")
    self.timing = timing
    self.times = times
  }

  /// Once, soon, from another thread: the usual behaviour.
  public static let `default` = CallbackScript()
  /// Once, inside the call, on the caller's thread.
  public static let synchronously = CallbackScript(timing: .synchronously)
  /// Once, after `delay`, from another thread.
  public static func later(_ delay: Duration = .milliseconds(50)) -> CallbackScript {
    CallbackScript(timing: .after(delay))
  }
  /// Twice in a row, from another thread.
  public static let twice = CallbackScript(times: 2)
  /// Never.
  public static let never = CallbackScript(times: 0)

  public var description: String {
    let when: String
    switch timing {
    case .synchronously: when = "synchronously"
    case .onBackgroundQueue: when = "on a background queue"
    case .after(let delay): when = "after \(delay)"
    case .scheduled(let scheduler): when = "on \(scheduler.name)"
    }
    return times == 1 ? "once, \(when)" : "\(times) times, \(when)"
  }

  /// Calls `callback` as this script says.
  public func deliver(_ callback: @escaping () -> Void) {
    guard times > 0 else { return }
    // Legacy code hands non-Sendable closures to other threads; that is the point here.
    let box = UncheckedSendable(callback)
    let times = self.times
    let repeated: @Sendable () -> Void = { for _ in 0..<times { box.value() } }
    switch timing {
    case .synchronously:
      repeated()
    case .onBackgroundQueue:
      DispatchQueue.global().async(execute: repeated)
    case .after(let delay):
      DispatchQueue.global().asyncAfter(
        deadline: .now() + delay.timeInterval, execute: repeated)
    case .scheduled(let scheduler):
      scheduler.schedule(repeated)
    }
  }
}

/// Somewhere a test wants legacy callbacks to run, named for the scripts' descriptions.
public struct CallbackScheduler: Sendable {
  /// What the callbacks run on, e.g. "the caller's one thread".
  public let name: String
  /// Runs the work later, wherever this scheduler runs work.
  public let schedule: @Sendable (@escaping @Sendable () -> Void) -> Void

  public init(
    name: String, schedule: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
  ) {
    self.name = name
    self.schedule = schedule
  }
}

/// Carries a value across threads without the compiler's checks, as legacy code did.
public struct UncheckedSendable<Value>: @unchecked Sendable {
  public let value: Value
  public init(_ value: Value) { self.value = value }
}

extension Duration {
  /// This duration in seconds, for Dispatch and Foundation APIs that take `TimeInterval`.
  public var timeInterval: TimeInterval {
    let (seconds, attoseconds) = components
    return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
  }
}
