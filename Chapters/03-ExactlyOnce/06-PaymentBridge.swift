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
  func pay(cents: Int, orderID: String) async throws -> Receipt {
    // TODO: Give the checkout an async `pay` that keeps the callback way's rules (one
    // idempotency key for every attempt, at most `maxAttempts` attempts, `attemptTimeout`
    // for each, `.unavailable` and timeouts tried again, `.declined` final; after the last
    // attempt, throw its error: `PaymentError.unavailable` or `PaymentError.timedOut`).
    // Cancelling the calling task must cancel the request in flight, start no other, and
    // throw `CancellationError`. The gateway may answer a request twice, and when this
    // returns no request may still be running. Whatever happens, resume exactly once.
    throw Unfinished()
  }
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
