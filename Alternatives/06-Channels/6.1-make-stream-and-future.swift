import CoroutineKit
import Dispatch

// The same bridge, made with `makeStream(of:)` instead of the closure initializer, and a
// coroutine future as the pump: its error says how the channel ended.

extension CoChannel where Element: Sendable {
  func elements() -> AsyncThrowingStream<Element, any Error> {
    let (stream, continuation) = AsyncThrowingStream.makeStream(of: Element.self)
    continuation.onTermination = { termination in
      if case .cancelled = termination { self.cancel() }
    }
    let pump = DispatchQueue.global().coroutineFuture { () -> Void in
      while true {
        continuation.yield(try self.awaitReceive())
      }
    }
    pump.whenComplete { result in
      switch result {
      case .success:
        continuation.finish()
      case .failure(let error):
        continuation.finish(throwing: error as? CoChannelError == .closed ? nil : error)
      }
    }
    return stream
  }
}
