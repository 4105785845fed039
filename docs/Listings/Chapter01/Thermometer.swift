// Chapter 1, "The idea": a completion-handler API and its async twin.
import LegacyKit

// listing: legacy
final class Thermometer: @unchecked Sendable {
  func readTemperature(completion: @escaping (Double) -> Void) {
    // Measures, then calls `completion` later, on a queue of its own.
    // listing: hide
    CallbackScript.default.deliver { completion(21.5) }
    // listing: show
  }
}
// listing: end

// listing: bridge
func currentTemperature(from thermometer: Thermometer) async -> Double {
  await withCheckedContinuation { continuation in
    thermometer.readTemperature { celsius in
      continuation.resume(returning: celsius)
    }
  }
}
// listing: end
