// Chapter 4, exercise 4.1: the onTermination closure keeps the delegate alive for as long
// as the stream lasts.
import LegacyKit

protocol HeartRateMonitorDelegate: AnyObject {
  func monitor(_ monitor: HeartRateMonitor, didMeasure beatsPerMinute: Int)
}

/// A made-up legacy monitor with a weak delegate.
final class HeartRateMonitor: @unchecked Sendable {
  weak var delegate: HeartRateMonitorDelegate?

  func start() {
    CallbackScript.default.deliver { [weak self] in
      guard let self else { return }
      self.delegate?.monitor(self, didMeasure: 72)
    }
  }

  func stop() {}
}

final class HeartRateFeed: HeartRateMonitorDelegate, Sendable {
  private let monitor: HeartRateMonitor
  private let continuation: AsyncStream<Int>.Continuation

  init(monitor: HeartRateMonitor, continuation: AsyncStream<Int>.Continuation) {
    self.monitor = monitor
    self.continuation = continuation
  }

  func monitor(_ monitor: HeartRateMonitor, didMeasure beatsPerMinute: Int) {
    continuation.yield(beatsPerMinute)
  }

  func stop() {
    monitor.stop()
    monitor.delegate = nil
  }
}

func heartRates(from monitor: HeartRateMonitor) -> AsyncStream<Int> {
  AsyncStream { continuation in
    let feed = HeartRateFeed(monitor: monitor, continuation: continuation)
    // listing: hold
    continuation.onTermination = { _ in feed.stop() }  // `feed`: your delegate
    // listing: end
    monitor.delegate = feed
    monitor.start()
  }
}
