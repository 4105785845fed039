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
  /// This answer keeps the callback way and bridges it as one operation: the rules
  /// (key, attempts, timeouts) stay in `PaymentOperation`, which already calls its
  /// completion once and cancels its own requests; the bridge only has to carry a cancel
  /// to it, whenever the cancel comes, and resume exactly once.
  func pay(cents: Int, orderID: String) async throws -> Receipt {
    let pending = PendingOperation()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let once = ResumeOnce(continuation)
        let operation = self.pay(
          cents: cents, orderID: orderID,
          completion: { result in
            switch result {
            case .success(let receipt): once.resume(returning: receipt)
            case .failure(.cancelled): once.resume(throwing: CancellationError())
            case .failure(let error): once.resume(throwing: error)
            }
          })
        pending.attach(operation)
      }
    } onCancel: {
      pending.cancel()
    }
  }
}

/// The payment in progress, shared with `onCancel` (exercise 3.4's pattern).
private final class PendingOperation: Sendable {
  private enum State {
    case notStarted
    case started(PaymentOperation)
    case cancelled
  }

  private let state = Mutex(State.notStarted)

  func attach(_ operation: PaymentOperation) {
    let cancelledFirst = state.withLock { state in
      if case .cancelled = state { return true }
      state = .started(operation)
      return false
    }
    if cancelledFirst { operation.cancel() }
  }

  func cancel() {
    let started = state.withLock { state -> PaymentOperation? in
      defer { state = .cancelled }
      if case .started(let operation) = state { return operation }
      return nil
    }
    started?.cancel()
  }
}
