// Chapter 8, exercise 8.2: the termination handler owns the weakly held delegate, and hangs
// up when the consumer stops.
import ChatKit

final class LineRelay: ChatConnectionDelegate, Sendable {
  private let continuation: AsyncThrowingStream<String, any Error>.Continuation

  init(_ continuation: AsyncThrowingStream<String, any Error>.Continuation) {
    self.continuation = continuation
  }

  func chatConnection(_ connection: ChatConnection, didReceive line: String) {
    continuation.yield(line)
  }

  func chatConnection(_ connection: ChatConnection, didDisconnectWithError error: Error?) {
    continuation.finish(throwing: error)
  }
}

extension ChatConnection {
  func lines() -> AsyncThrowingStream<String, any Error> {
    let (stream, continuation) = AsyncThrowingStream.makeStream(of: String.self)
    let relay = LineRelay(continuation)
    delegate = relay
    // listing: owner
    continuation.onTermination = { _ in
      withExtendedLifetime(relay) { self.disconnect() }
    }
    // listing: end
    return stream
  }
}
