import Foundation

/// A hub of environmental sensors, read many thousands of times a second by a dashboard.
///
/// Each read is cheap and answers through a completion handler, by default inside the
/// call, before ``read(channel:completion:)`` returns: the value is already in the hub's
/// memory. That is what makes the cost of the bridge around it worth measuring. The
/// handler is called as `script` says (a script with `times: 2` models a firmware bug
/// that answers twice). Thread-safe and reusable.
public final class SensorHub: @unchecked Sendable {
  private let script: CallbackScript
  private let lock = NSLock()
  private var readCount = 0

  public init(script: CallbackScript = .synchronously) {
    self.script = script
  }

  /// The value every read of `channel` reports: the same each time, so tests can check it.
  public static func value(of channel: Int) -> Double {
    20 + Double(channel) / 4
  }

  /// How many times ``read(channel:completion:)`` has been called.
  public var reads: Int {
    lock.lock()
    defer { lock.unlock() }
    return readCount
  }

  /// Reads the current value of `channel` and passes it to `completion`.
  public func read(channel: Int, completion: @escaping (Double) -> Void) {
    lock.lock()
    readCount += 1
    lock.unlock()
    let value = Self.value(of: channel)
    script.deliver { completion(value) }
  }
}
