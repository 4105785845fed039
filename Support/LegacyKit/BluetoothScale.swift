import Foundation

/// Why ``BluetoothScale`` could not weigh.
public enum ScaleError: Error, Equatable, Sendable {
  /// The person on the scale moved while it was measuring.
  case notSteady
}

/// A bathroom scale that talks Bluetooth, with a completion-handler SDK.
///
/// Its firmware resends a reading whenever the phone's acknowledgement gets lost, so one
/// measurement can call the handler more than once, and under load the repeats arrive
/// from several threads at the same moment. The first call carries the reading the scale
/// considers final; later ones are stale copies. Thread-safe and reusable.
public final class BluetoothScale: @unchecked Sendable {
  /// How the handler calls of one measurement are delivered.
  public enum Delivery: Sendable {
    /// As the script says: `times` calls, one after the other, when and where it says.
    case scripted(CallbackScript)
    /// `count` calls at the same moment, each from a thread of its own.
    case simultaneous(count: Int)
  }

  private let replies: [Result<Double, Error>]
  private let delivery: Delivery
  private let lock = NSLock()
  private var measurementCount = 0
  private var deliveredCount = 0

  /// - Parameters:
  ///   - replies: What the calls of each measurement report, in order; calls past the end
  ///     repeat the last reply. (With `.simultaneous`, call *i* reports reply *i*.)
  ///   - delivery: How many calls each measurement makes, and when and where.
  public init(replies: [Result<Double, Error>], delivery: Delivery = .scripted(.twice)) {
    precondition(!replies.isEmpty, "a scale needs at least one reply")
    self.replies = replies
    self.delivery = delivery
  }

  /// How many times ``measure(completion:)`` has been called.
  public var measurements: Int {
    lock.lock()
    defer { lock.unlock() }
    return measurementCount
  }

  /// How many handler calls all measurements have made so far.
  public var callbacksDelivered: Int {
    lock.lock()
    defer { lock.unlock() }
    return deliveredCount
  }

  /// How many handler calls each measurement makes.
  public var callbacksPerMeasurement: Int {
    switch delivery {
    case .scripted(let script): return script.times
    case .simultaneous(let count): return count
    }
  }

  /// Weighs whoever stands on the scale and reports to `completion`, possibly more than
  /// once: see ``BluetoothScale``.
  public func measure(completion: @escaping (Result<Double, Error>) -> Void) {
    lock.lock()
    measurementCount += 1
    lock.unlock()
    let replies = self.replies
    let reply = { (index: Int) in
      completion(replies[min(index, replies.count - 1)])
      self.lock.lock()
      self.deliveredCount += 1
      self.lock.unlock()
    }
    switch delivery {
    case .scripted(let script):
      var next = 0
      script.deliver {
        let index = next
        next += 1
        reply(index)
      }
    case .simultaneous(let count):
      let handler = UncheckedSendable(reply)
      callSimultaneously(count) { index in handler.value(index) }
    }
  }
}
