import ChatKit

extension ChatConnection {
  /// Connects to the chat server and joins as `name`; returns once the server welcomed us.
  ///
  /// Throws the connection's error (refused, name taken, …), or `CancellationError` when
  /// the task is cancelled before or while connecting.
  func connect(to host: String = "127.0.0.1", port: UInt16, as name: String) async throws {
    // A continuation that never throws: it hands back the completion's error, if any, and
    // the decisions are made here, after the await, where the task can be asked.
    let failure: (any Error)? = await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<(any Error)?, Never>) in
        connect(host: host, port: port, name: name) { continuation.resume(returning: $0) }
      }
    } onCancel: {
      disconnect()
    }
    guard let failure else { return }
    switch failure as? ChatConnectionError {
    case .cancelled?:
      throw CancellationError()
    case .alreadyUsed? where Task.isCancelled:
      // Cancelled before the legacy connect began: onCancel closed the connection first.
      throw CancellationError()
    default:
      throw failure
    }
  }
}
