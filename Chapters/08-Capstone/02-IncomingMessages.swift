import ChatKit

// The legacy way: a delegate hears every line after the welcome, one at a time, and then
// at most once that the connection ended.
//
//     final class ChatWindow: ChatConnectionDelegate {
//       func chatConnection(_ c: ChatConnection, didReceive line: String) { show(line) }
//       func chatConnection(_ c: ChatConnection, didDisconnectWithError error: Error?) {}
//     }
//
// The connection holds its delegate weakly: whoever sets it must keep it alive, for as long
// as the stream may be read, and no longer.

extension ChatConnection {
  /// The lines the server sends once we joined, as a stream.
  ///
  /// Call it before connecting, so that no line is missed. The stream finishes when the
  /// connection ends: cleanly after `disconnect()`, with the error when the server goes
  /// away. Stopping the iteration disconnects.
  func incomingLines() -> AsyncThrowingStream<String, any Error> {
    // TODO: Stream the lines the connection hears, as documented above: none missed, none lost
    // while nobody iterates yet, and an end that says how the connection ended.
    AsyncThrowingStream { $0.finish(throwing: Unfinished()) }
  }
}

private struct Unfinished: Error {}
