import ChatKit

// The legacy way: connect, and hear about it in a completion handler, once, on the
// connection's callback queue.
//
//     connection.connect(port: 4000, name: "alice") { error in
//       if let error { show(error) } else { startChatting() }
//     }
//
// `disconnect()` is the legacy cancel: during a connect it makes the completion fail with
// `.cancelled`. Before a connect it closes the connection for good: the connect then fails
// with `.alreadyUsed`.

extension ChatConnection {
  /// Connects to the chat server and joins as `name`; returns once the server welcomed us.
  ///
  /// Throws the connection's error (refused, name taken, …), or `CancellationError` when
  /// the task is cancelled before or while connecting.
  func connect(to host: String = "127.0.0.1", port: UInt16, as name: String) async throws {
    // Cancelled already: do not start. The handler below would otherwise run `disconnect()`
    // at once, before the legacy connect, which would then refuse the closed connection
    // with `.alreadyUsed`.
    try Task.checkCancellation()
    do {
      // The handler runs `disconnect()` as soon as the task is cancelled, even while we are
      // suspended on the continuation below; the legacy connect then fails with `.cancelled`.
      try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation {
          (continuation: CheckedContinuation<Void, any Error>) in
          connect(host: host, port: port, name: name) { error in
            if let error {
              continuation.resume(throwing: error)
            } else {
              continuation.resume()
            }
          }
        }
      } onCancel: {
        disconnect()
      }
    } catch ChatConnectionError.cancelled {
      // The legacy word for "cancelled" becomes the one Swift code expects.
      throw CancellationError()
    } catch ChatConnectionError.alreadyUsed where Task.isCancelled {
      // Cancelled between the check above and the legacy connect: the same story, so the
      // same answer.
      throw CancellationError()
    }
  }
}
