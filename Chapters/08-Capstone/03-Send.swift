import ChatKit

// The legacy way: hand a line over and hear, once, whether it made it to the kernel.
//
//     connection.send("hello") { error in
//       if let error { show(error) }
//     }

extension ChatConnection {
  /// Sends one line to everyone else in the chat; returns once it is on its way.
  /// Cancelling the calling task leaves the connection as it is: the connection is not the
  /// send's to end, since it carries other lines both ways.
  ///
  /// Throws `.notConnected` before joining or after the end, `.invalidLine` for a newline
  /// or an over-long line.
  func send(_ line: String) async throws {
    // TODO: Return once the legacy `send(_:completion:)` reports the line on its way, or
    // throw the error it reports.
    throw Unfinished()
  }
}

private struct Unfinished: Error {}
