import ChatKit

extension ChatConnection {
  /// Connects to the chat server and joins as `name`; returns once the server welcomed us.
  ///
  /// Throws the connection's error (refused, name taken, …), or `CancellationError` when
  /// the task is cancelled before or while connecting.
  func connect(to host: String = "127.0.0.1", port: UInt16, as name: String) async throws {
    // Nothing to be checked at run time: the legacy contract calls the completion exactly
    // once, so an unsafe continuation, resumed with a Result, is enough.
    do {
      try await withTaskCancellationHandler {
        try await withUnsafeThrowingContinuation {
          (continuation: UnsafeContinuation<Void, any Error>) in
          connect(host: host, port: port, name: name) { error in
            continuation.resume(with: error.map { .failure($0) } ?? .success(()))
          }
        }
      } onCancel: {
        disconnect()
      }
    } catch ChatConnectionError.cancelled {
      throw CancellationError()
    } catch ChatConnectionError.alreadyUsed where Task.isCancelled {
      // Cancelled before the legacy connect began: onCancel closed the connection first.
      throw CancellationError()
    }
  }
}
