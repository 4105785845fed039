// Chapter 8, exercise 8.3: an async method that shares its base name with the legacy one
// calls the legacy one with a trailing closure. A made-up intercom shows the shape.
import LegacyKit

struct IntercomError: Error {}

final class Intercom: @unchecked Sendable {
  func announce(_ text: String, completion: @escaping (Error?) -> Void) {
    let error: Error? = text.isEmpty ? IntercomError() : nil
    CallbackScript.default.deliver { completion(error) }
  }
}

// listing: extension
extension Intercom {
  func announce(_ text: String) async throws {
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<Void, any Error>) in
      announce(text) { error in  // the trailing closure picks the legacy method
        if let error {
          continuation.resume(throwing: error)
        } else {
          continuation.resume()
        }
      }
    }
  }
}
// listing: end
