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
    // TODO: Connect, and return once the server has welcomed us, or throw the connection's
    // error. Cancelling the task, before or during the connect, cancels it and throws
    // `CancellationError`.
    throw Unfinished()
  }
}

private struct Unfinished: Error {}
