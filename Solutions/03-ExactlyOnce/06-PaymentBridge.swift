import Foundation
import LegacyKit
import Synchronization

/// The app's checkout: pays for orders through the card gateway.
///
/// Every attempt to pay for one order is submitted with the same idempotency key, so a
/// retry can never charge the customer twice, even when an earlier attempt was charged
/// and only its answer got lost. A payment gets at most `maxAttempts` attempts; an attempt
/// that gets no answer within `attemptTimeout` is cancelled and counts as failed, like an
/// `.unavailable` answer. A declined card is final.
final class Checkout: Sendable {
  let gateway: PaymentGateway
  let maxAttempts: Int
  let attemptTimeout: Duration

  init(gateway: PaymentGateway, maxAttempts: Int = 3, attemptTimeout: Duration = .seconds(10)) {
    precondition(maxAttempts >= 1, "a payment needs at least one attempt")
    self.gateway = gateway
    self.maxAttempts = maxAttempts
    self.attemptTimeout = attemptTimeout
  }

  /// The key every attempt to pay for `orderID` is submitted with.
  func idempotencyKey(for orderID: String) -> String { "order-\(orderID)" }

  // MARK: The callback way, which the rest of the app still calls

  /// Pays `cents` for `orderID`. Calls `completion` once: with the receipt, with the last
  /// attempt's error (`.declined`, `.unavailable` or `.timedOut`), or with `.cancelled`
  /// after ``PaymentOperation/cancel()``.
  @discardableResult
  func pay(
    cents: Int, orderID: String,
    completion: @escaping @Sendable (Result<Receipt, PaymentError>) -> Void
  ) -> PaymentOperation {
    let operation = PaymentOperation(
      checkout: self, cents: cents, key: idempotencyKey(for: orderID), completion: completion)
    operation.start()
    return operation
  }
}

/// One payment in progress, the callback way: attempts, a timer per attempt, a cancel.
final class PaymentOperation: @unchecked Sendable {
  private let checkout: Checkout
  private let cents: Int
  private let key: String
  private let completion: @Sendable (Result<Receipt, PaymentError>) -> Void
  private let lock = NSLock()
  private var attempt = 0
  private var request: PaymentRequest?
  private var timer: DispatchWorkItem?
  private var done = false

  init(
    checkout: Checkout, cents: Int, key: String,
    completion: @escaping @Sendable (Result<Receipt, PaymentError>) -> Void
  ) {
    self.checkout = checkout
    self.cents = cents
    self.key = key
    self.completion = completion
  }

  func start() { nextAttempt() }

  /// Stops the payment: cancels the request in flight and completes with `.cancelled`.
  func cancel() {
    lock.lock()
    guard !done else { return lock.unlock() }
    done = true
    let request = self.request
    timer?.cancel()
    lock.unlock()
    request?.cancel()
    completion(.failure(.cancelled))
  }

  private func nextAttempt() {
    lock.lock()
    guard !done else { return lock.unlock() }
    attempt += 1
    let number = attempt
    lock.unlock()
    let request = checkout.gateway.submit(cents: cents, idempotencyKey: key) { [weak self] in
      self?.answered($0, attempt: number)
    }
    let timer = DispatchWorkItem { [weak self] in self?.timedOut(attempt: number) }
    lock.lock()
    // The answer may have come inside submit, or cancel() while it ran.
    let current = !done && attempt == number
    if current {
      self.request = request
      self.timer = timer
    }
    lock.unlock()
    guard current else { return request.cancel() }
    DispatchQueue.global().asyncAfter(
      deadline: .now() + checkout.attemptTimeout.timeInterval, execute: timer)
  }

  private func answered(_ result: Result<Receipt, PaymentError>, attempt number: Int) {
    lock.lock()
    // A late answer to an earlier attempt, a repeated one, or the .cancelled reply to a
    // cancel made here: already dealt with.
    guard !done, attempt == number, result != .failure(.cancelled) else { return lock.unlock() }
    timer?.cancel()
    let retry = result == .failure(.unavailable) && attempt < checkout.maxAttempts
    if !retry { done = true }
    lock.unlock()
    if retry { nextAttempt() } else { completion(result) }
  }

  private func timedOut(attempt number: Int) {
    lock.lock()
    guard !done, attempt == number else { return lock.unlock() }
    let request = self.request
    let retry = attempt < checkout.maxAttempts
    if !retry { done = true }
    lock.unlock()
    request?.cancel()
    if retry { nextAttempt() } else { completion(.failure(.timedOut)) }
  }
}

// MARK: The async way

extension Checkout {
  /// Pays `cents` for `orderID` and returns the receipt.
  ///
  /// Same rules as the callback way: one idempotency key for every attempt, at most
  /// `maxAttempts` attempts, `attemptTimeout` for each, `.unavailable` and timeouts tried
  /// again, anything else final. After the last attempt it throws that attempt's error,
  /// `PaymentError.unavailable` or `PaymentError.timedOut`. Cancelling the calling task
  /// cancels the request in flight, starts no other, and throws `CancellationError`.
  func pay(cents: Int, orderID: String) async throws -> Receipt {
    // The key is made once, outside the loop: a retry must be the same payment, so a
    // first attempt that was charged but whose answer was lost is not charged again.
    let key = idempotencyKey(for: orderID)
    var attempt = 1
    while true {
      do {
        // withTimeout (3.5) cancels the attempt when the limit passes, and waits for it
        // to end, so the timed-out request is cancelled before the next one starts.
        return try await withTimeout(attemptTimeout) {
          try await self.submit(cents: cents, idempotencyKey: key)
        }
      } catch let error where attempt < maxAttempts && Self.isWorthRetrying(error) {
        // No other attempt for a caller that cancelled while this one was ending (its
        // answer was on its way, so the cancel found nothing left to stop).
        try Task.checkCancellation()
        // A retry starts a new attempt at once. If the caller has been cancelled in the
        // meantime, that attempt's onCancel runs at once and it ends in CancellationError,
        // which is never retried.
        attempt += 1
      } catch is TimeoutError {
        throw PaymentError.timedOut
      }
      // Anything else is final: a receipt returned above; .declined; CancellationError,
      // because the caller cancelled and no longer wants the payment.
    }
  }

  /// Whether an attempt that ended with `error` may be made again.
  private static func isWorthRetrying(_ error: any Error) -> Bool {
    switch error {
    case PaymentError.unavailable, is TimeoutError: true
    default: false
    }
  }

  /// One attempt: submits the payment and waits for the gateway's answer. Cancelling the
  /// task cancels the request, whenever the cancel comes.
  private func submit(cents: Int, idempotencyKey key: String) async throws -> Receipt {
    let pending = PendingRequest()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        // The gateway may answer twice (and a cancelled request answers .cancelled), so
        // the first answer wins and the rest are ignored: ResumeOnce from 3.2.
        let once = ResumeOnce(continuation)
        let request = gateway.submit(cents: cents, idempotencyKey: key) { result in
          switch result {
          case .success(let receipt): once.resume(returning: receipt)
          // Swift code expects cancellation to look like CancellationError.
          case .failure(.cancelled): once.resume(throwing: CancellationError())
          case .failure(let error): once.resume(throwing: error)
          }
        }
        pending.attach(request)
      }
    } onCancel: {
      // It only asks the request to stop; the gateway's .cancelled answer is what resumes
      // the continuation, so there is one place that resumes, not two.
      pending.cancel()
    }
  }
}

/// The meeting point of one attempt and its `onCancel`, which can run in either order and
/// at the same time (exercise 3.4): whichever comes second sees what the first left.
private final class PendingRequest: Sendable {
  private enum State {
    case notSubmitted
    case submitted(PaymentRequest)
    case cancelled
  }

  private let state = Mutex(State.notSubmitted)

  /// Records the submitted request, or cancels it at once if the task was cancelled first.
  func attach(_ request: PaymentRequest) {
    let cancelledFirst = state.withLock { state in
      if case .cancelled = state { return true }
      state = .submitted(request)
      return false
    }
    // Outside the lock: cancel() may answer synchronously, inside the call.
    if cancelledFirst { request.cancel() }
  }

  /// Cancels the submitted request, or makes sure a request submitted later is cancelled.
  func cancel() {
    let submitted = state.withLock { state -> PaymentRequest? in
      defer { state = .cancelled }
      if case .submitted(let request) = state { return request }
      return nil
    }
    submitted?.cancel()
  }
}
