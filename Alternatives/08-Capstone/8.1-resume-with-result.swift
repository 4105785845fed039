import ChatKit
import Synchronization

extension ChatConnection {
  /// Connects to the chat server and joins as `name`; returns once the server welcomed us.
  ///
  /// Throws the connection's error (refused, name taken, …), or `CancellationError` when
  /// the task is cancelled before or while connecting.
  func connect(to host: String = "127.0.0.1", port: UInt16, as name: String) async throws {
    let cancelled = CancelledFlag()
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        connect(host: host, port: port, name: name) { error in
          let outcome: Result<Void, any Error> =
            switch error {
            case nil: .success(())
            case ChatConnectionError.cancelled?: .failure(CancellationError())
            // onCancel's disconnect() came before the connect (the task was cancelled before
            // it began), and the legacy connect refuses a closed connection as used.
            case ChatConnectionError.alreadyUsed? where cancelled.isSet:
              .failure(CancellationError())
            case let error?: .failure(error)
            }
          continuation.resume(with: outcome)
        }
      }
    } onCancel: {
      cancelled.set()  // before disconnect(), so that the completion can tell why it failed
      disconnect()
    }
  }
}

/// Whether the cancellation handler has run.
private final class CancelledFlag: Sendable {
  private let value = Mutex(false)

  var isSet: Bool { value.withLock { $0 } }

  func set() { value.withLock { $0 = true } }
}
