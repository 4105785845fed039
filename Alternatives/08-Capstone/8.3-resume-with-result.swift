import ChatKit

extension ChatConnection {
  /// Sends one line to everyone else in the chat; returns once it is on its way.
  ///
  /// Throws `.notConnected` before joining or after the end, `.invalidLine` for a newline
  /// or an over-long line.
  func send(_ line: String) async throws {
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<Void, any Error>) in
      send(line) { error in
        continuation.resume(with: error.map { .failure($0) } ?? .success(()))
      }
    }
  }
}
