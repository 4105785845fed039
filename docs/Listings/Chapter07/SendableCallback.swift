// Chapter 7, exercise 7.1: a callback written on the main actor, marked @Sendable so it
// may run on whichever thread completes the future.
import CoroutineKit

extension CoFuture where Value: Sendable {
  /// Waits for the value from main-actor code.
  @MainActor var valueOnMain: Value {
    get async throws {
      try await withCheckedThrowingContinuation { continuation in
        // listing: sendable
        whenComplete { @Sendable result in continuation.resume(with: result) }
        // listing: end
      }
    }
  }
}
