// Chapter 2, exercise 2.4: one place that ends the operation: take the continuation, stop
// the device, stop listening, then resume.
import LegacyKit
import Synchronization

protocol AltimeterDelegate: AnyObject {
  func altimeter(_ altimeter: Altimeter, didMeasure metres: Double)
  func altimeter(_ altimeter: Altimeter, didFailWith error: any Error)
}

/// A made-up legacy altimeter that reports until it is stopped.
final class Altimeter: @unchecked Sendable {
  weak var delegate: AltimeterDelegate?

  func startUpdates() {
    CallbackScript.twice.deliver { [weak self] in
      guard let self else { return }
      self.delegate?.altimeter(self, didMeasure: 112)
    }
  }

  func stopUpdates() {}
}

final class FirstReading: AltimeterDelegate, Sendable {
  private let altimeter: Altimeter
  private let waiting = Mutex<CheckedContinuation<Double, any Error>?>(nil)

  init(altimeter: Altimeter) {
    self.altimeter = altimeter
  }

  func run() async throws -> Double {
    try await withCheckedThrowingContinuation { continuation in
      waiting.withLock { $0 = continuation }
      altimeter.delegate = self
      altimeter.startUpdates()
    }
  }

  func altimeter(_ altimeter: Altimeter, didMeasure metres: Double) {
    finish(.success(metres))
  }

  func altimeter(_ altimeter: Altimeter, didFailWith error: any Error) {
    finish(.failure(error))
  }

  // listing: finish
  private func finish(_ result: Result<Double, any Error>) {
    guard let continuation = waiting.withLock({ $0.take() }) else { return }  // late: ignore
    altimeter.stopUpdates()
    altimeter.delegate = nil
    continuation.resume(with: result)
  }
  // listing: end
}
