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
  private let state: Mutex<ChannelState<Element>>
  /// Tells one waiting call apart from another, so a cancellation finds its own.
  private let nextID = Atomic<Int>(0)

  /// A channel that buffers up to `capacity` elements; 0 (the default) is a rendezvous.
  init(capacity: Int = 0) {
    precondition(capacity >= 0, "a channel cannot have a negative capacity")
    state = Mutex(ChannelState(capacity: capacity))
  }

  /// Sends `element`, suspending while the channel has no room for it.
  ///
  /// Throws ``ChannelClosedError`` if the channel is closed before the element gets in, and
  /// `CancellationError` if the task is cancelled first; then the element was not sent.
  func send(_ element: Element) async throws {
    let id = makeID()
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (sender: SendContinuation) in
        // Deciding under the lock whether the task is cancelled closes the race with
        // `onCancel`: it runs after the cancelled flag is set, and needs this lock, so it
        // either finds this sender registered or this check sees the flag.
        let action = state.withLock { state in
          Task.isCancelled
            ? .resumeSender(sender, .failure(CancellationError()))
            : state.send(element, id: id, sender)
        }
        // Resumed only after the lock is released: resuming wakes another task, which
        // should not find the lock still held (and nobody should run code under it).
        action.run()
      }
    } onCancel: {
      state.withLock { $0.cancelSender(id) }.run()
    }
  }

  /// Receives the next element, suspending while there is none; `nil` once the channel is
  /// closed and every buffered element has been received.
  ///
  /// Throws `CancellationError` if the task is cancelled; then nothing was received.
  func receive() async throws -> Element? {
    let id = makeID()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (receiver: ReceiveContinuation) in
        let action = state.withLock { state in
          Task.isCancelled
            ? .resumeReceiver(receiver, .failure(CancellationError()))
            : state.receive(id: id, receiver)
        }
        action.run()
      }
    } onCancel: {
      state.withLock { $0.cancelReceiver(id) }.run()
    }
  }

  /// Ends sending. Buffered elements are still received, then every receiver gets `nil`;
  /// senders still waiting throw ``ChannelClosedError``. Closing again does nothing.
  func close() {
    state.withLock { $0.close() }.run()
  }

  private typealias SendContinuation = CheckedContinuation<Void, any Error>
  private typealias ReceiveContinuation = CheckedContinuation<Element?, any Error>

  private func makeID() -> Int {
    nextID.wrappingAdd(1, ordering: .relaxed).newValue
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

// MARK: - The rules

/// The channel's rules, as a value: every transition is a pure function of the state that
/// says which continuations to resume, and with what. It never resumes anything itself, it
/// knows nothing about locks, and it runs entirely under the channel's lock, so each
/// transition is atomic.
///
/// Invariants, true between transitions:
/// - receivers wait only while the buffer is empty and no sender waits;
/// - senders wait only while the buffer is full (always, for a rendezvous);
/// - after `close()`, nobody sends and nobody waits to send.
private struct ChannelState<Element: Sendable> {
  typealias SendContinuation = CheckedContinuation<Void, any Error>
  typealias ReceiveContinuation = CheckedContinuation<Element?, any Error>

  let capacity: Int
  private var buffer = Queue<Element>()
  private var senders = Queue<(id: Int, element: Element, continuation: SendContinuation)>()
  private var receivers = Queue<(id: Int, continuation: ReceiveContinuation)>()
  private var isClosed = false

  init(capacity: Int) {
    self.capacity = capacity
  }

  /// What a transition asks the channel to do once the lock is released.
  enum Action: Sendable {
    case none
    case resumeSender(SendContinuation, Result<Void, any Error>)
    case resumeReceiver(ReceiveContinuation, Result<Element?, any Error>)
    /// A hand-off, or a receiver that made room: both sides go on.
    case resumeBoth(SendContinuation, ReceiveContinuation, Element)
    /// `close()`: waiting senders fail, waiting receivers get `nil`.
    case end(senders: [SendContinuation], receivers: [ReceiveContinuation])

    func run() {
      switch self {
      case .none:
        break
      case .resumeSender(let sender, let result):
        sender.resume(with: result)
      case .resumeReceiver(let receiver, let result):
        receiver.resume(with: result)
      case .resumeBoth(let sender, let receiver, let element):
        sender.resume()
        receiver.resume(returning: element)
      case .end(let senders, let receivers):
        for sender in senders { sender.resume(throwing: ChannelClosedError()) }
        for receiver in receivers { receiver.resume(returning: nil) }
      }
    }
  }

  mutating func send(_ element: Element, id: Int, _ sender: SendContinuation) -> Action {
    if isClosed {
      return .resumeSender(sender, .failure(ChannelClosedError()))
    }
    if let receiver = receivers.popFirst() {
      // Someone is waiting, so the buffer is empty: hand the element over directly.
      return .resumeBoth(sender, receiver.continuation, element)
    }
    if buffer.count < capacity {
      buffer.append(element)
      return .resumeSender(sender, .success(()))
    }
    // Full (or a rendezvous with nobody waiting): the element waits with its sender, and
    // is not in the channel until a receiver takes it or makes room for it.
    senders.append((id, element, sender))
    return .none
  }

  mutating func receive(id: Int, _ receiver: ReceiveContinuation) -> Action {
    if let element = buffer.popFirst() {
      // That made room: the longest-waiting sender's element moves into the buffer, behind
      // everything already there, and that sender goes on.
      if let sender = senders.popFirst() {
        buffer.append(sender.element)
        return .resumeBoth(sender.continuation, receiver, element)
      }
      return .resumeReceiver(receiver, .success(element))
    }
    if let sender = senders.popFirst() {
      // A rendezvous: take the element straight from the waiting sender.
      return .resumeBoth(sender.continuation, receiver, sender.element)
    }
    if isClosed {
      return .resumeReceiver(receiver, .success(nil))
    }
    receivers.append((id, receiver))
    return .none
  }

  /// The sender `id` was cancelled. If it still waits, it leaves the queue with its element
  /// and throws; if not, a receiver already took its element and its `send` returns.
  mutating func cancelSender(_ id: Int) -> Action {
    guard let sender = senders.remove(where: { $0.id == id }) else { return .none }
    return .resumeSender(sender.continuation, .failure(CancellationError()))
  }

  /// The receiver `id` was cancelled. If it still waits, it leaves the queue having taken
  /// nothing; if not, it already has its element (or `nil`) and returns it.
  mutating func cancelReceiver(_ id: Int) -> Action {
    guard let receiver = receivers.remove(where: { $0.id == id }) else { return .none }
    return .resumeReceiver(receiver.continuation, .failure(CancellationError()))
  }

  mutating func close() -> Action {
    guard !isClosed else { return .none }
    isClosed = true
    // Receivers wait only on an empty buffer, so ending them loses nothing; with elements
    // buffered there are none, and the buffer drains first.
    return .end(
      senders: senders.removeAll().map(\.continuation),
      receivers: receivers.removeAll().map(\.continuation))
  }
}

/// A first-in, first-out queue: appends and removals at the front in constant time.
private struct Queue<Element> {
  private var storage: [Element?] = []
  private var head = 0

  var count: Int { storage.count - head }

  mutating func append(_ element: Element) {
    storage.append(element)
  }

  mutating func popFirst() -> Element? {
    guard head < storage.count else { return nil }
    defer { compact() }
    let element = storage[head]
    storage[head] = nil
    head += 1
    return element
  }

  /// Removes and returns the first element that matches, keeping the others in order.
  mutating func remove(where matches: (Element) -> Bool) -> Element? {
    guard let index = storage[head...].firstIndex(where: { $0.map(matches) ?? false }) else {
      return nil
    }
    defer { compact() }
    return storage.remove(at: index)
  }

  mutating func removeAll() -> [Element] {
    defer {
      storage = []
      head = 0
    }
    return storage[head...].map { $0! }
  }

  /// Drops the used slots at the front once they are at least half of the storage.
  private mutating func compact() {
    if head > 32 && head * 2 >= storage.count {
      storage.removeFirst(head)
      head = 0
    }
  }
}
