// Chapter 5, "The idea": waiting for any future-like type from async code.
import LegacyKit

/// A made-up future from another library: one result, delivered to callbacks.
final class Deferred<Value>: @unchecked Sendable {
  private let value: Value

  init(_ value: Value) {
    self.value = value
  }

  func onResult(_ callback: @escaping (Result<Value, any Error>) -> Void) {
    let value = self.value
    CallbackScript.default.deliver { callback(.success(value)) }
  }
}

// listing: bridge
extension Deferred where Value: Sendable {
  var asyncResult: Value {
    get async throws {
      try await withCheckedThrowingContinuation { continuation in
        onResult { result in continuation.resume(with: result) }
      }
    }
  }
}
// listing: end
