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
  /// A queued message, and the submitter waiting for its receipt.
  private struct Job: Sendable {
    var message: TextMessage
    var reply: CheckedContinuation<Receipt, any Error>
  }

  private let gateway: any TextGateway
  private let capacity: Int
  private let interval: Duration
  private let clock: any Clock<Duration>
  /// The channel: any number of submitters yield into it, and `run()` alone reads it.
  private let jobs: AsyncStream<Job>
  private let intake: AsyncStream<Job>.Continuation

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
    // `bufferingOldest`: when `capacity` messages wait, the stream keeps them and refuses
    // the newcomer (yield says `.dropped`), as the legacy `offer` did. `bufferingNewest`
    // would drop the oldest waiting message instead, which was accepted long ago.
    (jobs, intake) = AsyncStream.makeStream(
      of: Job.self, bufferingPolicy: .bufferingOldest(capacity))
  }

  /// Queues `message` and returns its receipt once it is sent, or the gateway's error.
  /// Throws `TextQueueError.full` at once when `capacity` messages are already waiting, and
  /// `TextQueueError.closed` after `close()` or once `run()` has stopped.
  func submit(_ message: TextMessage) async throws -> Receipt {
    // The submitter's continuation travels with its message: whoever ends up holding the
    // job (this switch, run(), or the drain after a cancellation) resumes it, once.
    // A submitter's own cancellation is not looked at: a text, once queued, is sent.
    try await withCheckedThrowingContinuation { reply in
      switch intake.yield(Job(message: message, reply: reply)) {
      case .enqueued:
        break  // run() has it now
      case .dropped(let job):
        job.reply.resume(throwing: TextQueueError.full)
      case .terminated:
        reply.resume(throwing: TextQueueError.closed)
      @unknown default:
        reply.resume(throwing: TextQueueError.closed)
      }
    }
  }

  /// No more messages: those already queued are still sent, then `run()` returns.
  func close() {
    // A finished stream refuses new elements (`.terminated`) but still hands out the ones
    // it holds, then ends run()'s loop.
    intake.finish()
  }

  /// The worker. Call it once: an `AsyncStream` has one reader.
  func run() async {
    await work(on: clock)
  }

  /// `run()` with the clock's own type, so that its instants can be kept and compared.
  private func work<C: Clock<Duration>>(on clock: C) async {
    var nextStart: C.Instant?
    // One loop to the end of the stream. Once this task is cancelled the stream is
    // finished, so it hands out only what it still holds, and each of those fails.
    for await job in jobs {
      do {
        if let nextStart { try await clock.sleep(until: nextStart, tolerance: nil) }
        try Task.checkCancellation()
      } catch {
        intake.finish()
        job.reply.resume(throwing: CancellationError())
        continue
      }
      nextStart = clock.now.advanced(by: interval)
      do {
        job.reply.resume(returning: try await gateway.send(job.message))
      } catch {
        job.reply.resume(throwing: error)
      }
    }
    intake.finish()
  }
}
