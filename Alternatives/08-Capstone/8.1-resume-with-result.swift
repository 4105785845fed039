import ChatKit

extension ChatConnection {
  /// Connects to the chat server and joins as `name`; returns once the server welcomed us.
  ///
  /// Throws the connection's error (refused, name taken, …), or `CancellationError` when
  /// the task is cancelled while connecting.
  func connect(to host: String = "127.0.0.1", port: UInt16, as name: String) async throws {
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        connect(host: host, port: port, name: name) { error in
          let outcome: Result<Void, any Error> =
            switch error {
            case nil: .success(())
            case ChatConnectionError.cancelled?: .failure(CancellationError())
            case let error?: .failure(error)
            }
          continuation.resume(with: outcome)
        }
      }
    } onCancel: {
      disconnect()
    }
  }
}
