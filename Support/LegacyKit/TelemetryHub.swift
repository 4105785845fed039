import Foundation

/// One measurement of a ``TelemetryHub``.
public struct Sample: Hashable, Sendable, CustomStringConvertible {
  /// 1 for the first sample of a session, 2 for the second, and so on.
  public var number: Int
  /// The acceleration measured, in g.
  public var value: Double

  public init(number: Int, value: Double) {
    self.number = number
    self.value = value
  }

  public var description: String { "Sample #\(number)" }
}

/// What the receiver of a ``TelemetryHub``'s samples did with one of them. The hub keeps
/// every receipt, for its diagnostics, and stops when it is told to.
public enum SampleReceipt: Hashable, Sendable, CustomStringConvertible {
  /// The sample was kept; the receiver has room for `room` more before it is full.
  case accepted(room: Int)
  /// The receiver was full and threw a sample away to make room: this one, or an older one
  /// it had kept. The hub counts it as lost.
  case dropped(Sample)
  /// Nobody wants samples any more: the hub stops measuring at once.
  case closed

  public var description: String {
    switch self {
    case .accepted(let room): return "accepted(room: \(room))"
    case .dropped(let sample): return "dropped(\(sample))"
    case .closed: return "closed"
    }
  }
}

/// An accelerometer hub from a pre-concurrency SDK. It measures at its own pace and pushes
/// every sample into the closure it is given; it cannot wait for a slow app. The closure's
/// ``SampleReceipt`` tells it whether the sample was kept or which one was lost, and whether
/// to go on. There is no stop method: answering ``SampleReceipt/closed`` is the only way to
/// stop it before the end.
///
/// A session hands over samples #1 to #`sampleCount`, one every `interval` (all in a row
/// when it is zero), and then calls the completion handler once. The script decides when the
/// first sample comes (inside ``startMeasuring(receive:completion:)`` for a synchronous script;
/// later samples then follow on the hub's queue unless the interval is zero), on which thread,
/// and how many times each sample is handed over (0: the hub never gets going). Samples arrive
/// one at a time, in order. Thread-safe; start it again after a session for a new one.
public final class TelemetryHub: @unchecked Sendable {
  private let lock = NSLock()
  private let queue = DispatchQueue(label: "LegacyKit.TelemetryHub")
  private let sampleCount: Int
  private let interval: Duration
  private let script: CallbackScript
  private var measuring = false
  private var finished = false
  private var allReceipts: [SampleReceipt] = []
  private var handedOver = 0
  private var longestWait = Duration.zero

  /// - Parameters:
  ///   - sampleCount: How many samples a session measures.
  ///   - interval: The time between two samples.
  ///   - script: When the first sample comes, on which thread, and how many times each is
  ///     handed over.
  public init(sampleCount: Int, interval: Duration = .zero, script: CallbackScript = .default) {
    precondition(sampleCount >= 0, "a session cannot measure a negative number of samples")
    self.sampleCount = sampleCount
    self.interval = interval
    self.script = script
  }

  /// Whether a session is running: started, and neither complete nor closed.
  public var isMeasuring: Bool {
    lock.lock()
    defer { lock.unlock() }
    return measuring
  }

  /// Whether the last session handed over every sample and called its completion handler.
  public var hasFinished: Bool {
    lock.lock()
    defer { lock.unlock() }
    return finished
  }

  /// Every receipt, in the order the samples were handed over.
  public var receipts: [SampleReceipt] {
    lock.lock()
    defer { lock.unlock() }
    return allReceipts
  }

  /// The samples the receiver reported as dropped, in order.
  public var lostSamples: [Sample] {
    receipts.compactMap { receipt in
      if case .dropped(let sample) = receipt { return sample }
      return nil
    }
  }

  /// The longest time one call of the receive closure kept the hub's thread waiting (asleep
  /// or blocked, not merely slow), in every session: the hub cannot wait for a slow app.
  /// Measured on Linux; zero elsewhere.
  public var longestWaitInReceive: Duration {
    lock.lock()
    defer { lock.unlock() }
    return longestWait
  }

  /// How many samples have been handed over, in every session.
  public var handedOverCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return handedOver
  }

  /// Starts a session: each sample goes to `receive`, and `completion` is called after the
  /// last one, unless a receipt said ``SampleReceipt/closed``. Both are called on the hub's
  /// queue, or inside this call for a synchronous script. Starting while a session is running
  /// does nothing.
  public func startMeasuring(
    receive: @escaping (Sample) -> SampleReceipt, completion: @escaping () -> Void
  ) {
    lock.lock()
    let alreadyOn = measuring
    if !alreadyOn {
      measuring = true
      finished = false
    }
    lock.unlock()
    guard !alreadyOn else { return }
    guard script.times > 0 else { return }

    // Legacy code hands non-Sendable closures to other threads; that is the point here.
    let session = UncheckedSendable(Session(receive: receive, completion: completion))
    switch script.timing {
    case .synchronously:
      measure(from: 1, session.value)
    case .onBackgroundQueue:
      queue.async { self.measure(from: 1, session.value) }
    case .after(let delay):
      queue.asyncAfter(deadline: .now() + delay.timeInterval) {
        self.measure(from: 1, session.value)
      }
    case .scheduled(let scheduler):
      scheduler.schedule { self.measure(from: 1, session.value) }
    }
  }

  private struct Session {
    var receive: (Sample) -> SampleReceipt
    var completion: () -> Void
  }

  /// Hands over samples from `number` on: all of them when the interval is zero, otherwise
  /// one, and schedules the next.
  private func measure(from number: Int, _ session: Session) {
    var number = number
    while number <= sampleCount {
      let sample = Sample(number: number, value: Double(number % 10) / 10)
      for _ in 0..<script.times {
        lock.lock()
        handedOver += 1
        lock.unlock()
        let waits = ThreadWaits()
        let receipt = session.receive(sample)
        let waited = waits.waited
        lock.lock()
        longestWait = max(longestWait, waited)
        allReceipts.append(receipt)
        if receipt == .closed { measuring = false }
        lock.unlock()
        if receipt == .closed { return }
      }
      number += 1
      if interval > .zero, number <= sampleCount {
        let next = number
        let box = UncheckedSendable(session)
        queue.asyncAfter(deadline: .now() + interval.timeInterval) {
          self.measure(from: next, box.value)
        }
        return
      }
    }
    lock.lock()
    measuring = false
    lock.unlock()
    session.completion()
    lock.lock()
    finished = true
    lock.unlock()
  }
}
