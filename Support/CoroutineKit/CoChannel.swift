import Foundation

/// Why a channel could not send or receive.
public enum CoChannelError: Error, Equatable, Sendable {
  /// The channel was closed: nothing more can be sent, and everything sent has been
  /// received.
  case closed
  /// The channel was cancelled: its buffered elements were dropped.
  case cancelled
}

/// A queue between coroutines: senders block when it is full, receivers when it is empty.
///
/// Legacy: inside a coroutine, `awaitSend(_:)` and `awaitReceive()` block; anywhere,
/// `offer(_:)` and `poll()` try without blocking, and `whenReceive(_:)` takes the next
/// element by callback. Every element sent is received once, in the order each sender sent
/// it. `close()` ends sending and lets receivers drain what is buffered; `cancel()` drops
/// the buffer and fails everyone waiting.
///
/// In the workbook: an `AsyncSequence`, and Chapter 6's `Channel<T>`, built on
/// continuations.
public final class CoChannel<Element> {
  /// How many elements the channel holds before a sender has to wait.
  public enum BufferType: Equatable, Sendable {
    /// None: each sender waits until a receiver takes its element (a hand-off).
    case rendezvous
    /// Up to `capacity` elements; then senders wait. Capacity 0 is a rendezvous.
    case buffered(capacity: Int)
    /// Any number: senders never wait.
    case unlimited
    /// One, the newest: a send replaces an element nobody has received yet; senders never
    /// wait.
    case conflated
  }

  private typealias Receiver = (Result<Element, CoChannelError>) -> Void
  private typealias Sender = (element: Element, resume: (Result<Void, CoChannelError>) -> Void)

  /// The buffer kind the channel was made with.
  public let bufferType: BufferType
  private let capacity: Int

  private let lock = NSLock()
  private var buffer = FIFO<Element>()
  /// Senders waiting for room (rendezvous or full): their elements are not in `buffer`.
  private var senders = FIFO<Sender>()
  /// Receivers waiting for an element: only while `buffer` is empty and no sender waits.
  private var receivers = FIFO<Receiver>()
  private var closed = false
  private var cancelled = false
  /// Closed and drained, or cancelled: the completion callbacks have run.
  private var finished = false
  private var completions: [() -> Void] = []
  /// The most `whenReceive` callbacks of this channel ever running on one thread at once.
  private var deepestNesting = 0

  /// A channel of the given buffer kind.
  public init(bufferType: BufferType) {
    switch bufferType {
    case .rendezvous: capacity = 0
    case .buffered(let capacity):
      precondition(capacity >= 0, "a channel cannot have a negative capacity")
      self.capacity = capacity
    case .unlimited: capacity = .max
    case .conflated: capacity = 1
    }
    self.bufferType = bufferType
  }

  /// A channel that buffers up to `capacity` elements.
  public convenience init(capacity: Int) {
    self.init(bufferType: .buffered(capacity: capacity))
  }

  /// How many elements are buffered (not counting senders still waiting).
  public var count: Int {
    lock.lock()
    defer { lock.unlock() }
    return buffer.count
  }

  /// True when no element is buffered.
  public var isEmpty: Bool { count == 0 }

  /// True after `close()` or `cancel()`: nothing more can be sent.
  public var isClosed: Bool {
    lock.lock()
    defer { lock.unlock() }
    return closed
  }

  /// True after `cancel()`.
  public var isCanceled: Bool {
    lock.lock()
    defer { lock.unlock() }
    return cancelled
  }

  /// For tests: the most `whenReceive(_:)` callbacks of this channel that ever ran on one
  /// thread at once, each called inside another (1 when none ran inside another; 0 before
  /// any ran). A callback that asks for the next element from inside itself, while elements
  /// are ready, nests one call per element: a long backlog overflows the thread's stack.
  public var deepestCallbackNesting: Int {
    lock.lock()
    defer { lock.unlock() }
    return deepestNesting
  }

  // MARK: Sending

  /// Sends `element`, blocking the current coroutine while the channel has no room.
  ///
  /// Throws ``CoChannelError/closed`` or ``CoChannelError/cancelled`` if the channel is
  /// closed or cancelled before the element is taken; then it was not sent. Must be called
  /// inside a coroutine. In the workbook: `try await channel.send(element)`.
  public func awaitSend(_ element: Element) throws {
    let coroutine = CoroutineRunner.current(calling: "CoChannel.awaitSend(_:)")
    let result: Result<Void, CoChannelError> = coroutine.suspend { resume in
      var actions: [() -> Void] = []
      lock.lock()
      if let outcome = deliver(element, &actions) {
        lock.unlock()
        actions.forEach { $0() }
        resume(outcome)
      } else {
        senders.append((element, resume))
        lock.unlock()
      }
    }
    try result.get()
  }

  /// Sends `element` if that needs no waiting (a receiver waits, or there is room); true
  /// if it was sent. Works anywhere.
  @discardableResult
  public func offer(_ element: Element) -> Bool {
    var actions: [() -> Void] = []
    lock.lock()
    let outcome = deliver(element, &actions)
    lock.unlock()
    actions.forEach { $0() }
    if case .success = outcome { return true }
    return false
  }

  // MARK: Receiving

  /// Receives the next element, blocking the current coroutine while there is none.
  ///
  /// Throws ``CoChannelError/closed`` once the channel is closed and drained, and
  /// ``CoChannelError/cancelled`` once it is cancelled. Must be called inside a coroutine.
  /// In the workbook: `try await channel.receive()`, or `for await` over the channel.
  public func awaitReceive() throws -> Element {
    try receive(calling: "CoChannel.awaitReceive()").get()
  }

  /// Takes the next element if there is one without waiting; nil otherwise. Works anywhere.
  public func poll() -> Element? {
    var actions: [() -> Void] = []
    lock.lock()
    let outcome = take(&actions)
    lock.unlock()
    actions.forEach { $0() }
    if case .success(let element)? = outcome { return element }
    return nil
  }

  /// Calls `callback` with the next element (or the error that ends the channel): at once,
  /// on this thread, if it is ready; otherwise on the thread of the sender, `close()` or
  /// `cancel()` that provides it. Works anywhere; each call takes one element.
  public func whenReceive(_ callback: @escaping (Result<Element, CoChannelError>) -> Void) {
    receive { [self] result in
      let depth = CallbackNesting.enter()
      lock.lock()
      deepestNesting = Swift.max(deepestNesting, depth)
      lock.unlock()
      callback(result)
      CallbackNesting.leave()
    }
  }

  // MARK: Ending

  /// Ends sending: later sends fail with ``CoChannelError/closed``, and so do senders
  /// still waiting (their elements are not sent). Receivers still get every buffered
  /// element, then ``CoChannelError/closed``. False if the channel was already closed.
  ///
  /// In the workbook: `channel.close()`, and the end of a `for await` loop.
  @discardableResult
  public func close() -> Bool {
    var actions: [() -> Void] = []
    lock.lock()
    guard !closed else {
      lock.unlock()
      return false
    }
    closed = true
    let failedSenders = senders.removeAll()
    let failedReceivers = receivers.removeAll()  // there are some only if nothing is buffered
    finishIfDrained(&actions)
    lock.unlock()
    for sender in failedSenders { sender.resume(.failure(.closed)) }
    for receiver in failedReceivers { receiver(.failure(.closed)) }
    actions.forEach { $0() }
    return true
  }

  /// Closes the channel and drops its buffered elements; waiting senders and receivers,
  /// and every later send and receive, fail with ``CoChannelError/cancelled``.
  ///
  /// In the workbook: cancelling the tasks that send and receive.
  public func cancel() {
    var actions: [() -> Void] = []
    lock.lock()
    guard !cancelled else {
      lock.unlock()
      return
    }
    cancelled = true
    closed = true
    let dropped = buffer.removeAll()
    let failedSenders = senders.removeAll()
    let failedReceivers = receivers.removeAll()
    finishIfDrained(&actions)
    lock.unlock()
    withExtendedLifetime(dropped) {}  // released here, outside the lock
    for sender in failedSenders { sender.resume(.failure(.cancelled)) }
    for receiver in failedReceivers { receiver(.failure(.cancelled)) }
    actions.forEach { $0() }
  }

  /// Calls `callback` once the channel is closed and drained, or cancelled: at once if it
  /// is already, otherwise on the thread that ends it.
  public func whenComplete(_ callback: @escaping () -> Void) {
    lock.lock()
    if finished {
      lock.unlock()
      callback()
      return
    }
    completions.append(callback)
    lock.unlock()
  }

  // MARK: The rules, applied under the lock

  /// Hands `element` to a waiting receiver or buffers it; nil if the sender has to wait.
  private func deliver(
    _ element: Element, _ actions: inout [() -> Void]
  ) -> Result<Void, CoChannelError>? {
    if cancelled { return .failure(.cancelled) }
    if closed { return .failure(.closed) }
    if let receiver = receivers.popFirst() {
      actions.append { receiver(.success(element)) }
      return .success(())
    }
    if bufferType == .conflated {
      let replaced = buffer.removeAll()
      actions.append { withExtendedLifetime(replaced) {} }
    }
    guard buffer.count < capacity else { return nil }
    buffer.append(element)
    return .success(())
  }

  /// Takes the next element (from the buffer, or from a waiting sender); the error that
  /// ends the channel; or nil if the receiver has to wait.
  private func take(_ actions: inout [() -> Void]) -> Result<Element, CoChannelError>? {
    if let element = buffer.popFirst() {
      // A full buffer has room again: the longest-waiting sender's element moves in.
      if let sender = senders.popFirst() {
        buffer.append(sender.element)
        actions.append { sender.resume(.success(())) }
      }
      finishIfDrained(&actions)
      return .success(element)
    }
    if let sender = senders.popFirst() {  // a rendezvous: the hand-off
      actions.append { sender.resume(.success(())) }
      return .success(sender.element)
    }
    if cancelled { return .failure(.cancelled) }
    if closed { return .failure(.closed) }
    return nil
  }

  private func finishIfDrained(_ actions: inout [() -> Void]) {
    guard closed, buffer.isEmpty, !finished else { return }
    finished = true
    actions += completions
    completions = []
  }

  /// Takes the next element for `receiver`, now or when one comes.
  private func receive(_ receiver: @escaping Receiver) {
    var actions: [() -> Void] = []
    lock.lock()
    if let outcome = take(&actions) {
      lock.unlock()
      actions.forEach { $0() }
      receiver(outcome)
    } else {
      receivers.append(receiver)
      lock.unlock()
    }
  }

  private func receive(calling api: String) -> Result<Element, CoChannelError> {
    let coroutine = CoroutineRunner.current(calling: api)
    return coroutine.suspend { resume in receive(resume) }
  }
}

extension CoChannel: @unchecked Sendable where Element: Sendable {}

extension CoChannel: Sequence {
  /// Receives element after element, blocking the coroutine in between; ends (nil) when
  /// the channel is closed and drained, or cancelled. `next()` must be called inside a
  /// coroutine.
  ///
  /// In the workbook: `for await element in channel`.
  public struct Iterator: IteratorProtocol {
    let channel: CoChannel

    public mutating func next() -> Element? {
      try? channel.receive(calling: "iterating a CoChannel").get()
    }
  }

  /// Iteration for `for element in channel` inside a coroutine.
  public func makeIterator() -> Iterator {
    Iterator(channel: self)
  }
}

/// How many `whenReceive` callbacks run on the current thread, one inside another.
private enum CallbackNesting {
  private static let key = "CoroutineKit.CoChannel.callbackNesting"

  /// Counts one more on this thread, and returns the new count.
  static func enter() -> Int {
    let depth = (Thread.current.threadDictionary[key] as? Int ?? 0) + 1
    Thread.current.threadDictionary[key] = depth
    return depth
  }

  static func leave() {
    let depth = (Thread.current.threadDictionary[key] as? Int ?? 1) - 1
    Thread.current.threadDictionary[key] = depth
  }
}

/// A first-in, first-out queue with constant-time removal at the front.
struct FIFO<Element> {
  private var storage: [Element?] = []
  private var head = 0

  var count: Int { storage.count - head }
  var isEmpty: Bool { head == storage.count }

  mutating func append(_ element: Element) {
    storage.append(element)
  }

  mutating func popFirst() -> Element? {
    guard head < storage.count else { return nil }
    let element = storage[head]
    storage[head] = nil
    head += 1
    if head >= 64 && head * 2 >= storage.count {
      storage.removeFirst(head)
      head = 0
    }
    return element
  }

  /// Empties the queue, returning what it held, first first.
  mutating func removeAll() -> [Element] {
    let rest = storage[head...].map { $0! }
    storage = []
    head = 0
    return rest
  }
}
