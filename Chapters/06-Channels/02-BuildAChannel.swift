import Synchronization

// The coroutine way: a CoChannel between coroutines, which block while they wait.
//
//     let orders = CoChannel<Order>(capacity: 8)
//     queue.startCoroutine { for order in incoming { try orders.awaitSend(order) }; orders.close() }
//     queue.startCoroutine { for order in orders { try pack(order) } }
//
// A blocked coroutine holds a thread. In async code a waiting sender or receiver must
// suspend instead: park a continuation, and let the other side resume it.

/// Thrown by ``Channel/send(_:)`` when the channel is closed: the element was not sent.
struct ChannelClosedError: Error, Equatable {}

/// A channel between tasks: senders suspend while it is full, receivers while it is empty.
///
/// - `capacity` 0 is a *rendezvous*: each `send` waits until a receiver takes its element.
///   A capacity N > 0 buffers up to N elements before senders wait.
/// - Any number of tasks may send and receive at once. Every element is received exactly
///   once, and the elements of one sender come out in the order it sent them. Waiting
///   senders and waiting receivers are each served first come, first served.
/// - `send` returns once its element is in the channel (buffered, or taken by a receiver),
///   and throws if it never got in: ``ChannelClosedError`` when the channel is or gets
///   closed, `CancellationError` when its task is cancelled. A `send` that throws sent
///   nothing.
/// - `close()` ends sending. Receivers still get every buffered element, then `nil`.
///   Senders still waiting when it is closed throw ``ChannelClosedError``.
/// - Cancelling a task that waits in `send` or `receive` resumes it at once with
///   `CancellationError`; it gives or takes nothing. A task that is already cancelled
///   throws at once, without sending or receiving.
final class Channel<Element: Sendable>: Sendable {
  // TODO: Implement the channel described above: `init`, `send`, `receive` and `close`, with
  // whatever stored properties they need.

  /// A channel that buffers up to `capacity` elements; 0 (the default) is a rendezvous.
  init(capacity: Int = 0) {
    precondition(capacity >= 0, "a channel cannot have a negative capacity")
  }

  /// Sends `element`, suspending while the channel has no room for it.
  ///
  /// Throws ``ChannelClosedError`` if the channel is closed before the element gets in, and
  /// `CancellationError` if the task is cancelled first; then the element was not sent.
  func send(_ element: Element) async throws {
    throw Unfinished()
  }

  /// Receives the next element, suspending while there is none; `nil` once the channel is
  /// closed and every buffered element has been received.
  ///
  /// Throws `CancellationError` if the task is cancelled; then nothing was received.
  func receive() async throws -> Element? {
    throw Unfinished()
  }

  /// Ends sending. Buffered elements are still received, then every receiver gets `nil`;
  /// senders still waiting throw ``ChannelClosedError``. Closing again does nothing.
  func close() {
  }
}

extension Channel: AsyncSequence {
  /// Receives element after element; ends when the channel is closed and drained, and
  /// throws `CancellationError` when the iterating task is cancelled.
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

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
