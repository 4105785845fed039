import Foundation

/// Proof that the gateway charged a card.
public struct Receipt: Equatable, Sendable {
  /// The gateway's id for the charge.
  public let id: String
  /// How much was charged, in cents.
  public let cents: Int
  /// The key the payment was submitted with.
  public let idempotencyKey: String
}

/// Why a payment did not go through.
public enum PaymentError: Error, Equatable, Sendable {
  /// The bank said no. Final: trying again gets the same answer.
  case declined
  /// The gateway could not take the payment just now. Transient: try again.
  case unavailable
  /// No answer came in time (the app's own timer says so; the gateway never does).
  case timedOut
  /// ``PaymentRequest/cancel()`` stopped the request before it got an answer.
  case cancelled
}

/// A payment on its way to the gateway; ``PaymentGateway/submit(cents:idempotencyKey:completion:)``
/// returns one.
public final class PaymentRequest: @unchecked Sendable {
  enum State {
    case running, finished, cancelled
  }

  private let gateway: PaymentGateway
  /// The key it was submitted with.
  public let idempotencyKey: String
  // Guarded by the gateway's lock.
  var state = State.running
  var handler: ((Result<Receipt, PaymentError>) -> Void)?

  init(
    gateway: PaymentGateway, idempotencyKey: String,
    handler: @escaping (Result<Receipt, PaymentError>) -> Void
  ) {
    self.gateway = gateway
    self.idempotencyKey = idempotencyKey
    self.handler = handler
  }

  /// Stops the request if it has no answer yet: the handler then receives
  /// `.failure(.cancelled)` (on another thread, or inside this call, as the gateway's
  /// `cancelReply` says), and a request that has not been charged never will be. Does
  /// nothing once the request has its answer or has been cancelled.
  public func cancel() {
    gateway.cancel(self)
  }
}

/// A card-payment gateway with a completion-handler SDK, in the style of the classic
/// payment SDKs.
///
/// Payments carry an idempotency key: the gateway charges each key at most once, and a
/// payment submitted again with a key it has already charged gets the same receipt back,
/// without a second charge. That is what makes retrying safe, as long as the retry uses
/// the same key.
///
/// The gateway answers each submission as its script says, in order: approve, report
/// itself unavailable, decline, or say nothing (with or without charging the card first:
/// an answer lost on the way back). A buggy mode, `repliesTwice`, sends every answer a
/// second time shortly after the first, as an SDK that retries its own delivery does.
/// Everything is counted, so tests can see how many attempts were made, with which keys,
/// and how many times a customer was charged. Thread-safe and reusable.
public final class PaymentGateway: @unchecked Sendable {
  /// What the gateway does with one submission.
  public enum Reply: Sendable {
    /// Charges the card (once per key) and sends the receipt, when the script says.
    case approves(CallbackScript = .default)
    /// Sends `.unavailable`, when the script says. Charges nothing.
    case unavailable(CallbackScript = .default)
    /// Sends `.declined`, when the script says. Charges nothing.
    case declines(CallbackScript = .default)
    /// Charges the card at once, and the answer never arrives: only a cancel ends it.
    case chargesSilently
    /// Charges nothing and never answers: only a cancel ends it.
    case hangs
  }

  private let replies: [Reply]
  private let repliesTwice: Bool
  private let cancelReply: CallbackScript
  private let whileSubmitting: (() -> Void)?
  private let whileHandingOver: (() -> Void)?
  private let lock = NSLock()
  private var keys: [String] = []
  private var receipts: [String: Receipt] = [:]
  private var running = 0
  private var peakRunning = 0
  private var cancelled = 0
  private var duplicates = 0

  /// - Parameters:
  ///   - replies: What the gateway does with each submission, in order; submissions past
  ///     the end get the last reply.
  ///   - repliesTwice: Whether every answer (approved, unavailable, declined or
  ///     cancelled) is sent a second time, 20 ms after the first.
  ///   - cancelReply: When `.failure(.cancelled)` arrives after a cancel. Its `times`
  ///     must be 1.
  ///   - whileSubmitting: Called inside ``submit(cents:idempotencyKey:completion:)``, on
  ///     the caller's thread, after the request has started and before the call returns
  ///     it: a test can cancel the calling Swift task there.
  ///   - whileHandingOver: Called on the answering thread once a request has its answer, so
  ///     that a cancel no longer stops it, and before its completion handler runs: a test
  ///     can cancel the calling Swift task there, in the gap every real SDK has between
  ///     "answered" and the callback.
  public init(
    replies: [Reply], repliesTwice: Bool = false, cancelReply: CallbackScript = .default,
    whileSubmitting: (@Sendable () -> Void)? = nil,
    whileHandingOver: (@Sendable () -> Void)? = nil
  ) {
    precondition(!replies.isEmpty, "a gateway needs at least one reply")
    precondition(cancelReply.times == 1, "a cancelled request reports it exactly once")
    self.replies = replies
    self.repliesTwice = repliesTwice
    self.cancelReply = cancelReply
    self.whileSubmitting = whileSubmitting
    self.whileHandingOver = whileHandingOver
  }

  /// How many payments have been submitted (every attempt counts).
  public var attempts: Int { locked { keys.count } }
  /// The idempotency key of each submission, in order.
  public var submittedKeys: [String] { locked { keys } }
  /// How many times a card was charged: one per key, however often it was submitted.
  public var charges: Int { locked { receipts.count } }
  /// How many requests have neither had their answer nor been cancelled.
  public var requestsRunning: Int { locked { running } }
  /// The most requests that were running at the same time.
  public var mostRequestsRunningAtOnce: Int { locked { peakRunning } }
  /// How many requests a cancel stopped before they had their answer.
  public var requestsCancelled: Int { locked { cancelled } }
  /// How many second copies of an answer `repliesTwice` has sent so far.
  public var duplicateReplies: Int { locked { duplicates } }

  /// Submits a payment of `cents` under `idempotencyKey`. `completion` receives the
  /// receipt, `.declined`, `.unavailable`, or `.cancelled` if the request is cancelled
  /// first; never `.timedOut`, since the gateway has no timer of its own.
  @discardableResult
  public func submit(
    cents: Int, idempotencyKey: String,
    completion: @escaping (Result<Receipt, PaymentError>) -> Void
  ) -> PaymentRequest {
    let request = PaymentRequest(gateway: self, idempotencyKey: idempotencyKey, handler: completion)
    let reply: Reply = locked {
      let reply = replies[min(keys.count, replies.count - 1)]
      keys.append(idempotencyKey)
      running += 1
      peakRunning = max(peakRunning, running)
      return reply
    }
    let box = UncheckedSendable(request)
    switch reply {
    case .approves(let script):
      script.deliver { [self] in
        answer(box.value) { self.charge(cents: cents, key: idempotencyKey) }
      }
    case .unavailable(let script):
      script.deliver { [self] in answer(box.value) { .failure(.unavailable) } }
    case .declines(let script):
      script.deliver { [self] in answer(box.value) { .failure(.declined) } }
    case .chargesSilently:
      locked { _ = charge(cents: cents, key: idempotencyKey) }
    case .hangs:
      break
    }
    whileSubmitting?()
    return request
  }

  /// Sends `request` its answer, unless it was cancelled first. `outcome` runs under the
  /// lock, only when the answer is really sent.
  private func answer(
    _ request: PaymentRequest, _ outcome: () -> Result<Receipt, PaymentError>
  ) {
    let sent: (Result<Receipt, PaymentError>, (Result<Receipt, PaymentError>) -> Void)? = locked {
      guard request.state == .running, let handler = request.handler else { return nil }
      request.state = .finished
      request.handler = nil
      running -= 1
      return (outcome(), handler)
    }
    guard let (result, handler) = sent else { return }
    whileHandingOver?()
    send(result, to: handler)
  }

  private func send(
    _ result: Result<Receipt, PaymentError>,
    to handler: @escaping (Result<Receipt, PaymentError>) -> Void
  ) {
    handler(result)
    guard repliesTwice else { return }
    let box = UncheckedSendable(handler)
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.02) { [self] in
      locked { duplicates += 1 }
      box.value(result)
    }
  }

  /// Charges `key` unless it has been charged already; must be called under the lock.
  private func charge(cents: Int, key: String) -> Result<Receipt, PaymentError> {
    if let receipt = receipts[key] { return .success(receipt) }
    let receipt = Receipt(id: "ch_\(receipts.count + 1)", cents: cents, idempotencyKey: key)
    receipts[key] = receipt
    return .success(receipt)
  }

  fileprivate func cancel(_ request: PaymentRequest) {
    let handler: ((Result<Receipt, PaymentError>) -> Void)? = locked {
      guard request.state == .running else { return nil }
      request.state = .cancelled
      cancelled += 1
      running -= 1
      defer { request.handler = nil }
      return request.handler
    }
    if let handler {
      cancelReply.deliver { [self] in send(.failure(.cancelled), to: handler) }
    }
  }

  private func locked<T>(_ body: () throws -> T) rethrows -> T {
    lock.lock()
    defer { lock.unlock() }
    return try body()
  }
}
