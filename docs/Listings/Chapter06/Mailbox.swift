// Chapter 6, exercise 6.1: end the stream the way the legacy channel ended.
import Foundation

enum LegacyMailboxError: Error {
  case closed
  case broken
}

/// A made-up blocking mailbox: awaitNext() blocks its thread until a message or the end.
final class LegacyMailbox: @unchecked Sendable {
  private let condition = NSCondition()
  private var messages: [String] = []
  private var isClosed = false

  func post(_ message: String) {
    condition.lock()
    messages.append(message)
    condition.signal()
    condition.unlock()
  }

  func close() {
    condition.lock()
    isClosed = true
    condition.broadcast()
    condition.unlock()
  }

  func awaitNext() throws -> String {
    condition.lock()
    defer { condition.unlock() }
    while messages.isEmpty && !isClosed { condition.wait() }
    guard !messages.isEmpty else { throw LegacyMailboxError.closed }
    return messages.removeFirst()
  }
}

func messages(from mailbox: LegacyMailbox) -> AsyncThrowingStream<String, any Error> {
  AsyncThrowingStream { continuation in
    Thread.detachNewThread {
      // listing: end-the-same-way
      do {
        while true { continuation.yield(try mailbox.awaitNext()) }
      } catch LegacyMailboxError.closed {
        continuation.finish()  // the end: the loop finishes normally
      } catch {
        continuation.finish(throwing: error)  // anything else: the loop throws
      }
      // listing: end
    }
  }
}
