import CoroutineKit
import Dispatch

/// A text message for the SMS gateway.
struct TextMessage: Equatable, Sendable {
  var to: String
  var body: String
}

/// The gateway's word that it took a message.
struct Receipt: Equatable, Sendable {
  var to: String
  var id: String
}

/// Why the queue would not take a message.
enum TextQueueError: Error, Equatable {
  /// `capacity` messages are already waiting.
  case full
  /// The queue was closed, or its worker stopped.
  case closed
}

/// The gateway's client, already migrated to async. The gateway takes one message per
/// `interval` from an account and rejects the rest, so every message goes through a queue.
protocol TextGateway: Sendable {
  func send(_ message: TextMessage) async throws -> Receipt
}

// MARK: - The legacy queue (the app still ships it; read it, leave it as it is)

/// The queue the app used before, on a `CoChannel`, with a coroutine as its worker.
///
///     let texts = LegacyTextQueue(capacity: 50, interval: .seconds(1)) { message in
///       try gateway.blockingSend(message)  // the gateway client of the coroutine days
///     }
///     let receipt = try texts.submit(TextMessage(to: "+351 912 345 678", body: "Your code: 4821")).await()
///
/// When the user signs out, the app calls `cancel()`: the worker stops, and the messages
/// still queued are dropped with their promises. A coroutine waiting for one of those
/// receipts waits forever.
final class LegacyTextQueue {
  private let channel: CoChannel<(message: TextMessage, reply: CoPromise<Receipt>)>

  init(
    capacity: Int, interval: Duration, queue: DispatchQueue = .global(),
    deliver: @escaping (TextMessage) throws -> Receipt
  ) {
    let channel = CoChannel<(message: TextMessage, reply: CoPromise<Receipt>)>(
      capacity: capacity)
    self.channel = channel
    queue.startCoroutine {
      var lastStart: ContinuousClock.Instant?
      // One message at a time, in order, until the channel is closed and drained (or
      // cancelled, which ends the loop at once).
      for (message, reply) in channel {
        if let lastStart {
          // At most one message per interval: wait for what is left of it.
          let left = interval - lastStart.duration(to: .now)
          if left > .zero { Coroutine.delay(left) }
        }
        lastStart = .now
        reply.complete(with: Result { try deliver(message) })
      }
    }
  }

  /// Queues `message`; the future completes with its receipt once it is sent. A full queue,
  /// or a closed one, refuses it at once.
  func submit(_ message: TextMessage) -> CoFuture<Receipt> {
    let reply = CoPromise<Receipt>()
    if !channel.offer((message, reply)) {
      reply.fail(channel.isClosed ? TextQueueError.closed : TextQueueError.full)
    }
    return reply
  }

  /// No more messages: those already queued are still sent, then the worker ends.
  func close() {
    channel.close()
  }

  /// Stops the worker at once; the messages still queued are dropped.
  func cancel() {
    channel.cancel()
  }
}

// MARK: - The queue you write

/// The same queue for async code, with `run()` as its worker, run by the task that owns
/// the queue:
///
///     let texts = TextQueue(gateway: gateway, capacity: 50, interval: .seconds(1))
///     async let worker: Void = texts.run()
///     let receipt = try await texts.submit(TextMessage(to: "+351 912 345 678", body: "Your code: 4821"))
final class TextQueue: Sendable {
  private let gateway: any TextGateway
  private let capacity: Int
  private let interval: Duration
  private let clock: any Clock<Duration>

  /// A queue that holds up to `capacity` (at least 1) messages waiting to be sent, and
  /// starts at most one send per `interval`, measured on `clock`.
  init(
    gateway: any TextGateway, capacity: Int, interval: Duration,
    clock: any Clock<Duration> = ContinuousClock()
  ) {
    precondition(capacity > 0, "a queue needs room for at least one message")
    self.gateway = gateway
    self.capacity = capacity
    self.interval = interval
    self.clock = clock
  }

  // TODO: Replace the CoChannel with an AsyncStream, and give async callers the legacy
  // queue's behaviour: run() sends the messages one at a time, in the order they were
  // submitted, starting at most one send per `interval` on `clock`; a full queue refuses a
  // new message at once; a failed send fails only its own message; after close(), run()
  // sends what is queued and returns. Fix the legacy bug too: when the task running run()
  // is cancelled, run() returns, every message still waiting fails with
  // CancellationError, and later submits are refused, so that nobody waits forever.

  /// Queues `message` and returns its receipt once it is sent, or the gateway's error.
  /// Throws `TextQueueError.full` at once when `capacity` messages are already waiting, and
  /// `TextQueueError.closed` after `close()` or once `run()` has stopped.
  func submit(_ message: TextMessage) async throws -> Receipt {
    throw Unfinished()
  }

  /// No more messages: those already queued are still sent, then `run()` returns.
  func close() {
  }

  /// The worker. Call it once.
  func run() async {
  }
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
