// Chapter 4, "The idea": a push-style legacy source and its AsyncStream.
import Foundation
import Synchronization

// listing: legacy
final class Anemometer: @unchecked Sendable {
  func startReporting(_ handler: @escaping (Double) -> Void) {
    // listing: elide // …
    let timer = DispatchSource.makeTimerSource(queue: queue)
    timer.schedule(deadline: .now(), repeating: 0.1)
    timer.setEventHandler { handler(Double.random(in: 2...30)) }
    lock.withLock { self.timer = timer }
    timer.activate()
    // listing: show
  }

  func stopReporting() {
    // listing: elide // …
    lock.withLock { timer }?.cancel()
    // listing: show
  }
  // listing: hide

  private let queue = DispatchQueue(label: "anemometer")
  private let lock = NSLock()
  private var timer: (any DispatchSourceTimer)?
  // listing: show
}
// listing: end

// listing: stream
func windSpeeds(from anemometer: Anemometer) -> AsyncStream<Double> {
  AsyncStream { continuation in
    continuation.onTermination = { _ in
      anemometer.stopReporting()
    }
    anemometer.startReporting { knots in
      continuation.yield(knots)
    }
  }
}
// listing: end
