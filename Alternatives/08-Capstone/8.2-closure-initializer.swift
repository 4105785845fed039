import ChatKit

extension ChatConnection {
  /// The lines the server sends once we joined, as a stream.
  ///
  /// Call it before connecting, so that no line is missed. The stream finishes when the
  /// connection ends: cleanly after `disconnect()`, with the error when the server goes
  /// away. Stopping the iteration disconnects.
  func incomingLines() -> AsyncThrowingStream<String, any Error> {
    // The closure runs at once, before this returns: the delegate is set before connect.
    AsyncThrowingStream { continuation in
      let relay = LineRelay(
        yield: { continuation.yield($0) },
        finish: { continuation.finish(throwing: $0) })
      delegate = relay
      continuation.onTermination = { _ in
        withExtendedLifetime(relay) { self.disconnect() }
      }
    }
  }
}

/// Turns delegate calls into calls of two closures.
private final class LineRelay: ChatConnectionDelegate, Sendable {
  let yield: @Sendable (String) -> Void
  let finish: @Sendable ((any Error)?) -> Void

  init(
    yield: @escaping @Sendable (String) -> Void,
    finish: @escaping @Sendable ((any Error)?) -> Void
  ) {
    self.yield = yield
    self.finish = finish
  }

  func chatConnection(_ connection: ChatConnection, didReceive line: String) {
    yield(line)
  }

  func chatConnection(_ connection: ChatConnection, didDisconnectWithError error: (any Error)?) {
    finish(error)
  }
}
