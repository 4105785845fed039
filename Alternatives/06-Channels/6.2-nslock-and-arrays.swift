import Foundation

// The same channel with an NSLock around plain stored properties (the class promises its
// own thread safety with @unchecked Sendable), arrays as queues, and one token object per
// waiting call instead of an integer id.

struct ChannelClosedError: Error, Equatable {}

final class Channel<Element: Sendable>: @unchecked Sendable {
  private typealias Sender = (token: Token, element: Element, continuation: SendContinuation)
  private typealias Receiver = (token: Token, continuation: ReceiveContinuation)
  private typealias SendContinuation = CheckedContinuation<Void, any Error>
  private typealias ReceiveContinuation = CheckedContinuation<Element?, any Error>

  /// Names one waiting call, so that its cancellation finds it.
  private final class Token: Sendable {}

  private let lock = NSLock()
  private let capacity: Int
  private var buffer: [Element] = []
  private var senders: [Sender] = []
  private var receivers: [Receiver] = []
  private var isClosed = false

  init(capacity: Int = 0) {
    precondition(capacity >= 0, "a channel cannot have a negative capacity")
    self.capacity = capacity
  }

  func send(_ element: Element) async throws {
    let token = Token()
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (sender: SendContinuation) in
        lock.lock()
        if Task.isCancelled {
          lock.unlock()
          sender.resume(throwing: CancellationError())
        } else if isClosed {
          lock.unlock()
          sender.resume(throwing: ChannelClosedError())
        } else if !receivers.isEmpty {
          let receiver = receivers.removeFirst()
          lock.unlock()
          sender.resume()
          receiver.continuation.resume(returning: element)
        } else if buffer.count < capacity {
          buffer.append(element)
          lock.unlock()
          sender.resume()
        } else {
          senders.append((token, element, sender))
          lock.unlock()
        }
      }
    } onCancel: {
      lock.lock()
      let index = senders.firstIndex { $0.token === token }
      let cancelled = index.map { senders.remove(at: $0) }
      lock.unlock()
      cancelled?.continuation.resume(throwing: CancellationError())
    }
  }

  func receive() async throws -> Element? {
    let token = Token()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (receiver: ReceiveContinuation) in
        lock.lock()
        if Task.isCancelled {
          lock.unlock()
          receiver.resume(throwing: CancellationError())
        } else if !buffer.isEmpty {
          let element = buffer.removeFirst()
          let sender = senders.isEmpty ? nil : senders.removeFirst()
          if let sender { buffer.append(sender.element) }
          lock.unlock()
          sender?.continuation.resume()
          receiver.resume(returning: element)
        } else if !senders.isEmpty {
          let sender = senders.removeFirst()
          lock.unlock()
          sender.continuation.resume()
          receiver.resume(returning: sender.element)
        } else if isClosed {
          lock.unlock()
          receiver.resume(returning: nil)
        } else {
          receivers.append((token, receiver))
          lock.unlock()
        }
      }
    } onCancel: {
      lock.lock()
      let index = receivers.firstIndex { $0.token === token }
      let cancelled = index.map { receivers.remove(at: $0) }
      lock.unlock()
      cancelled?.continuation.resume(throwing: CancellationError())
    }
  }

  func close() {
    lock.lock()
    guard !isClosed else { return lock.unlock() }
    isClosed = true
    let waitingSenders = senders
    let waitingReceivers = receivers
    senders = []
    receivers = []
    lock.unlock()
    for sender in waitingSenders { sender.continuation.resume(throwing: ChannelClosedError()) }
    for receiver in waitingReceivers { receiver.continuation.resume(returning: nil) }
  }
}

extension Channel: AsyncSequence {
  struct AsyncIterator: AsyncIteratorProtocol {
    let channel: Channel

    func next() async throws -> Element? {
      try await channel.receive()
    }
  }

  func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(channel: self)
  }
}
