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
    let (lines, continuation) = AsyncThrowingStream.makeStream(of: String.self)
    let relay = LineRelay(continuation)
    delegate = relay
    continuation.onTermination = { _ in
      // Capturing `relay` keeps the weakly held delegate alive for as long as the stream
      // runs; when the consumer stops listening, the connection has no reason to stay.
      withExtendedLifetime(relay) { self.disconnect() }
    }
    return lines
  }
}

/// Turns delegate calls into stream events.
private final class LineRelay: ChatConnectionDelegate, Sendable {
  let continuation: AsyncThrowingStream<String, any Error>.Continuation

  init(_ continuation: AsyncThrowingStream<String, any Error>.Continuation) {
    self.continuation = continuation
  }

  func chatConnection(_ connection: ChatConnection, didReceive line: String) {
    continuation.yield(line)
  }

  func chatConnection(_ connection: ChatConnection, didDisconnectWithError error: (any Error)?) {
    // nil means we hung up ourselves: a normal end. Anything else the consumer must see.
    continuation.finish(throwing: error)
  }
}
