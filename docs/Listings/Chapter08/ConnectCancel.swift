// Chapter 8, exercise 8.1: cancellation reaches the socket through disconnect().
import ChatKit

extension ChatConnection {
  func join(_ host: String, port: UInt16, as name: String) async throws {
    // listing: cancel
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        // listing: elide // …
        connect(host: host, port: port, name: name) { error in
          if let error {
            continuation.resume(throwing: error)
          } else {
            continuation.resume()
          }
        }
        // listing: show
      }
    } onCancel: {
      disconnect()
    }
    // listing: end
  }
}
