import ChatKit

extension ChatConnection {
  /// Connects to the chat server and joins as `name`; returns once the server welcomed us.
  ///
  /// Throws the connection's error (refused, name taken, …), or `CancellationError` when
  /// the task is cancelled before or while connecting.
  func connect(to host: String = "127.0.0.1", port: UInt16, as name: String) async throws {
    do {
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
      // The legacy word for "cancelled", translated once, after the await.
      throw CancellationError()
    } catch ChatConnectionError.alreadyUsed where Task.isCancelled {
      // Cancelled before the legacy connect started: onCancel's disconnect() closed the
      // connection first, so the legacy connect refused it as used. Also a cancellation.
      throw CancellationError()
    }
  }
}
