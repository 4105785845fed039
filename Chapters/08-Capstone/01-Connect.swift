import ChatKit

// The legacy way: connect, and hear about it in a completion handler, once, on the
// connection's callback queue.
//
//     connection.connect(port: 4000, name: "alice") { error in
//       if let error { show(error) } else { startChatting() }
//     }
//
// `disconnect()` is the legacy cancel: during a connect it makes the completion fail with
// `.cancelled`.

extension ChatConnection {
  /// Connects to the chat server and joins as `name`; returns once the server welcomed us.
  ///
  /// Throws the connection's error (refused, name taken, …), or `CancellationError` when
  /// the task is cancelled while connecting.
  func connect(to host: String = "127.0.0.1", port: UInt16, as name: String) async throws {
    // The handler runs `disconnect()` as soon as the task is cancelled, even while we are
    // suspended on the continuation below; the legacy connect then fails with `.cancelled`.
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        connect(host: host, port: port, name: name) { error in
          switch error {
          case nil: continuation.resume()
          // The legacy word for "cancelled" becomes the one Swift code expects.
          case ChatConnectionError.cancelled?: continuation.resume(throwing: CancellationError())
          case let error?: continuation.resume(throwing: error)
          }
        }
      }
    } onCancel: {
      disconnect()
    }
  }
}
