import Synchronization

// The coroutine way: two channels whose senders never wait.
//
//     let log = CoChannel<LogLine>(bufferType: .unlimited)     // every line matters
//     let progress = CoChannel<Double>(bufferType: .conflated) // only the latest matters
//     worker.startCoroutine { for step in steps { run(step); log.offer(…); progress.offer(…) } }
//
// Both kinds keep a fast sender from ever waiting for a slow receiver. They differ in what
// the receiver sees when it falls behind.
//
// The channel below is given, except for one rule: what `send` does with an element, in
// `NonBlockingState.send(_:)`. That rule is all that tells the two kinds apart.

/// What a ``NonBlockingChannel`` does with elements nobody has received yet.
enum BufferKind: Sendable {
  /// Keeps every element, in order, however many there are. Nothing is lost; memory
  /// grows for as long as the receivers fall behind.
  case unlimited
  /// Keeps the newest element only: a send replaces an element nobody has received yet.
  /// A receiver that falls behind skips to the latest element; one that is already
  /// waiting gets the very next one.
  case conflated
}

/// A channel whose `send` never waits: any number of tasks may send and receive; each
/// element kept is received once.
///
/// `close()` ends sending: later sends are refused. Receivers get whatever is still kept,
/// then `nil`. A waiting receiver whose task is cancelled throws `CancellationError` and
/// takes nothing.
final class NonBlockingChannel<Element: Sendable>: Sendable {
  private let state: Mutex<NonBlockingState<Element>>
  private let nextID = Atomic<Int>(0)

  init(_ kind: BufferKind) {
    state = Mutex(NonBlockingState(kind: kind))
  }

  /// Sends `element` without waiting. Returns false, and drops it, once the channel is
  /// closed.
  @discardableResult
  func send(_ element: Element) -> Bool {
    switch state.withLock({ $0.send(element) }) {
    case .refused:
      return false
    case .kept:
      return true
    case .handOff(let receiver):
      // Outside the lock: resuming wakes the receiver's task.
      receiver.resume(returning: element)
      return true
    }
  }

  /// Receives the next element, suspending while there is none; `nil` once the channel is
  /// closed and empty. Throws `CancellationError` if the task is cancelled.
  func receive() async throws -> Element? {
    let id = nextID.wrappingAdd(1, ordering: .relaxed).newValue
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { receiver in
        let outcome: Result<Element?, any Error>? = state.withLock { state in
          // Checked in the same locked step that stores the continuation, so `onCancel`
          // either sees it stored or runs before and leaves the flag for this check.
          Task.isCancelled ? .failure(CancellationError()) : state.receive(id: id, receiver)
        }
        if let outcome { receiver.resume(with: outcome) }
      }
    } onCancel: {
      state.withLock { $0.cancelReceiver(id) }?.resume(throwing: CancellationError())
    }
  }

  /// Ends sending; receivers get what is kept, then `nil`.
  func close() {
    for receiver in state.withLock({ $0.close() }) {
      receiver.resume(returning: nil)
    }
  }
}

extension NonBlockingChannel: AsyncSequence {
  struct AsyncIterator: AsyncIteratorProtocol {
    let channel: NonBlockingChannel

    func next() async throws -> Element? {
      try await channel.receive()
    }
  }

  func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(channel: self)
  }
}

/// The channel's rules, run under its lock; they never resume anything themselves.
private struct NonBlockingState<Element: Sendable> {
  typealias Receiver = CheckedContinuation<Element?, any Error>

  enum SendOutcome: Sendable {
    /// The channel is closed; the element is dropped.
    case refused
    /// The element is in the buffer.
    case kept
    /// A receiver was waiting: resume it with the element.
    case handOff(Receiver)
  }

  let kind: BufferKind
  private var buffer = ElementQueue<Element>()
  private var receivers = ElementQueue<(id: Int, continuation: Receiver)>()
  private var isClosed = false

  init(kind: BufferKind) {
    self.kind = kind
  }

  mutating func send(_ element: Element) -> SendOutcome {
    // TODO: Decide what becomes of `element` (see `SendOutcome`): on a closed channel, and for
    // each kind of buffer (see `BufferKind`).
    .refused
  }

  /// An element, or `nil` for the end, to resume the receiver with now; or nil if it waits.
  mutating func receive(id: Int, _ receiver: Receiver) -> Result<Element?, any Error>? {
    if let element = buffer.popFirst() { return .success(element) }
    if isClosed { return .success(nil) }
    receivers.append((id, receiver))
    return nil
  }

  mutating func cancelReceiver(_ id: Int) -> Receiver? {
    receivers.remove { $0.id == id }?.continuation
  }

  /// Closes the channel; returns the receivers to end (there are some only when the buffer
  /// is empty, so nothing kept is lost).
  mutating func close() -> [Receiver] {
    guard !isClosed else { return [] }
    isClosed = true
    return receivers.removeAll().map(\.continuation)
  }
}

/// A first-in, first-out queue: appends and removals at the front in constant time.
private struct ElementQueue<Element> {
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

  private mutating func compact() {
    if head > 32 && head * 2 >= storage.count {
      storage.removeFirst(head)
      head = 0
    }
  }
}
