import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import ExactlyOnce

@Suite("3.6 Payment bridge (challenge)")
struct PaymentBridgeTests {
  static let cents = 4_250

  static func makeCheckout(
    _ replies: [PaymentGateway.Reply], repliesTwice: Bool = false,
    cancelReply: CallbackScript = .default, maxAttempts: Int = 3,
    attemptTimeout: Duration = .seconds(10), whileSubmitting: (@Sendable () -> Void)? = nil
  ) -> Checkout {
    Checkout(
      gateway: PaymentGateway(
        replies: replies, repliesTwice: repliesTwice, cancelReply: cancelReply,
        whileSubmitting: whileSubmitting),
      maxAttempts: maxAttempts, attemptTimeout: attemptTimeout)
  }

  static let hint =
    "a path never resumes the continuation: every answer of the gateway (a receipt, an "
    + "error or .cancelled) must resume it, and a cancel or a timeout must reach the "
    + "PaymentRequest"

  static let lostCancel =
    "the cancel never reached the PaymentRequest (this gateway only stops when cancelled); "
    + "onCancel must cancel it, and a cancel that comes before the PaymentRequest is stored "
    + "must not be lost"

  static let timeoutHint =
    "the timeout's cancel never reached the PaymentRequest (this gateway never answers "
    + "until it is cancelled): an attempt must end when its attemptTimeout passes, so "
    + "cancelling it (the timeout cancels its task) must cancel the PaymentRequest"

  static let sameKey =
    "every attempt must be submitted with the same idempotency key, "
    + "checkout.idempotencyKey(for: orderID), so a retry cannot charge the customer twice"

  static let throwsCancellationError =
    "a cancelled payment must throw CancellationError (the gateway's .cancelled answer "
    + "becomes CancellationError())"

  static let noRetryAfterCancel =
    "a cancelled payment must not be retried: the caller no longer wants it, so "
    + "CancellationError ends the payment at once"

  static let nothingRunning =
    "a PaymentRequest was still running after pay returned: cancel the request of an "
    + "attempt that is cancelled or times out"

  static let oneAtATime =
    "the retry was submitted while the attempt that timed out was still running: its "
    + "PaymentRequest must be cancelled, and the attempt ended, before the next one starts"

  @Test(
    "Returns the receipt when the first attempt is approved",
    arguments: [CallbackScript.synchronously, .default, .later(.milliseconds(100))])
  func approvedAtOnce(reply: CallbackScript) async throws {
    let checkout = Self.makeCheckout([.approves(reply)])

    let receipt = try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.hint) {
      try await checkout.pay(cents: Self.cents, orderID: "A1")
    }

    #expect(receipt.cents == Self.cents)
    #expect(receipt.idempotencyKey == checkout.idempotencyKey(for: "A1"), "\(Self.sameKey)")
    #expect(checkout.gateway.attempts == 1, "an approved payment must not be tried again")
    #expect(checkout.gateway.charges == 1)
    #expect(checkout.gateway.requestsRunning == 0)
  }

  @Test("Tries again while the gateway is unavailable, with the same idempotency key")
  func retriesWhileUnavailable() async throws {
    let checkout = Self.makeCheckout([.unavailable(), .unavailable(.synchronously), .approves()])

    let receipt = try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.hint) {
      try await checkout.pay(cents: Self.cents, orderID: "B2")
    }

    #expect(receipt.cents == Self.cents)
    #expect(
      checkout.gateway.attempts == 3,
      "an .unavailable answer must be tried again, up to maxAttempts (3) attempts")
    let key = checkout.idempotencyKey(for: "B2")
    #expect(
      checkout.gateway.submittedKeys == [key, key, key],
      "\(Self.sameKey); got \(checkout.gateway.submittedKeys)")
    #expect(checkout.gateway.charges == 1)
  }

  @Test("Gives up after maxAttempts and throws the last attempt's .unavailable")
  func givesUpWhenUnavailable() async throws {
    let checkout = Self.makeCheckout([.unavailable()], maxAttempts: 3)

    await #expect(
      throws: PaymentError.unavailable,
      "after maxAttempts attempts pay must throw the last attempt's error, PaymentError.unavailable"
    ) {
      try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.hint) {
        try await checkout.pay(cents: Self.cents, orderID: "C3")
      }
    }
    #expect(
      checkout.gateway.attempts == 3,
      """
      pay made \(checkout.gateway.attempts) attempts; it must make exactly maxAttempts (3): \
      more attempts than maxAttempts, or fewer
      """)
  }

  @Test("A declined card is final: no second attempt")
  func declinedIsFinal() async throws {
    let checkout = Self.makeCheckout([.declines(), .approves()])

    await #expect(throws: PaymentError.declined, "a declined card must throw PaymentError.declined")
    {
      try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.hint) {
        try await checkout.pay(cents: Self.cents, orderID: "D4")
      }
    }
    #expect(
      checkout.gateway.attempts == 1,
      """
      a declined card must not be retried: the bank gives the same answer (and the second \
      attempt here was approved, so the customer paid for a declined order)
      """)
    #expect(checkout.gateway.charges == 0)
  }

  @Test(
    "An attempt whose answer is lost times out, is cancelled, and the retry does not charge twice")
  func lostAnswerTimesOut() async throws {
    // The first attempt charges the card and its answer never arrives. Only the same
    // idempotency key turns the retry into the same payment.
    let checkout = Self.makeCheckout(
      [.chargesSilently, .approves()], attemptTimeout: .milliseconds(150))

    let receipt = try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.timeoutHint)
    {
      try await checkout.pay(cents: Self.cents, orderID: "E5")
    }

    #expect(receipt.idempotencyKey == checkout.idempotencyKey(for: "E5"), "\(Self.sameKey)")
    #expect(
      checkout.gateway.charges == 1,
      "pay charged the customer \(checkout.gateway.charges) times: \(Self.sameKey)")
    #expect(checkout.gateway.attempts == 2, "an attempt that timed out must be tried again")
    #expect(
      checkout.gateway.requestsCancelled == 1,
      "the attempt that timed out must have its PaymentRequest cancelled")
    #expect(checkout.gateway.mostRequestsRunningAtOnce == 1, "\(Self.oneAtATime)")
    #expect(checkout.gateway.requestsRunning == 0, "\(Self.nothingRunning)")
  }

  @Test("When every attempt times out, throws PaymentError.timedOut with no request left running")
  func everyAttemptTimesOut() async throws {
    let checkout = Self.makeCheckout([.hangs], attemptTimeout: .milliseconds(100))

    let outcome = await Result {
      try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.timeoutHint) {
        try await checkout.pay(cents: Self.cents, orderID: "F6")
      }
    }

    switch outcome {
    case .failure(PaymentError.timedOut): break
    case .failure(is DeadlineExceeded): return
    case .failure(let error):
      Issue.record(
        "every attempt timed out, so pay must throw PaymentError.timedOut; got \(error)")
    case .success(let receipt):
      Issue.record("every attempt timed out, yet pay returned \(receipt)")
    }
    #expect(
      checkout.gateway.attempts == 3,
      """
      pay made \(checkout.gateway.attempts) attempts: an attempt that timed out must be tried \
      again, up to maxAttempts (3) attempts, and no more attempts than maxAttempts
      """)
    #expect(checkout.gateway.requestsRunning == 0, "\(Self.nothingRunning)")
    #expect(checkout.gateway.mostRequestsRunningAtOnce == 1, "\(Self.oneAtATime)")
  }

  @Test("A gateway that sends every answer twice does not make pay resume twice")
  func answersTwice() async throws {
    let checkout = Self.makeCheckout([.unavailable(), .approves()], repliesTwice: true)

    let receipt = try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.hint) {
      try await checkout.pay(cents: Self.cents, orderID: "G7")
    }

    #expect(receipt.cents == Self.cents)
    // Wait for the second copies, so that a second resume crashes inside this test.
    await eventually("the gateway's second copy of each answer") {
      checkout.gateway.duplicateReplies == 2
    }
    #expect(checkout.gateway.attempts == 2)
  }

  @Test(
    "Cancelling the task cancels the request in flight, throws CancellationError, and tries no more",
    arguments: [CallbackScript.synchronously, .default, .later(.milliseconds(100))])
  func cancellingStopsThePayment(cancelReply: CallbackScript) async throws {
    let checkout = Self.makeCheckout([.hangs], cancelReply: cancelReply)
    let task = Task { try await checkout.pay(cents: Self.cents, orderID: "H8") }
    await eventually("the first attempt to be submitted") { checkout.gateway.attempts == 1 }

    task.cancel()

    await #expect(throws: CancellationError.self, "\(Self.throwsCancellationError)") {
      try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.lostCancel) {
        try await task.value
      }
    }
    #expect(checkout.gateway.attempts == 1, "\(Self.noRetryAfterCancel)")
    #expect(checkout.gateway.requestsRunning == 0, "\(Self.nothingRunning)")
  }

  @Test("A task cancelled before the call charges nothing and throws CancellationError")
  func alreadyCancelled() async throws {
    let checkout = Self.makeCheckout([.approves(.later(.milliseconds(100)))])

    await #expect(throws: CancellationError.self, "\(Self.throwsCancellationError)") {
      try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.lostCancel) {
        withUnsafeCurrentTask { $0?.cancel() }
        return try await checkout.pay(cents: Self.cents, orderID: "I9")
      }
    }
    #expect(checkout.gateway.attempts <= 1, "\(Self.noRetryAfterCancel)")
    #expect(checkout.gateway.requestsRunning == 0, "\(Self.nothingRunning)")
    #expect(checkout.gateway.charges == 0, "the payment was cancelled, yet the card was charged")
  }

  @Test(
    "A cancel that lands while a retry is being submitted, before its PaymentRequest is stored, still cancels it"
  )
  func cancelWhileSubmittingARetry() async throws {
    // The gateway cancels the paying task from inside the second submission, on whichever
    // thread submits it, before submit has returned the PaymentRequest.
    let submissions = Locked(0)
    let payment = Locked<Task<Receipt, any Error>?>(nil)
    let checkout = Self.makeCheckout([.unavailable(), .hangs]) {
      guard
        submissions.withLock({
          $0 += 1; return $0
        }) == 2
      else { return }
      let deadline = ContinuousClock.now + .seconds(1)
      while payment.value == nil, ContinuousClock.now < deadline { usleep(100) }
      payment.value?.cancel()
    }
    let task = Task { try await checkout.pay(cents: Self.cents, orderID: "J10") }
    payment.withLock { $0 = task }

    await #expect(throws: CancellationError.self, "\(Self.throwsCancellationError)") {
      try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.lostCancel) {
        try await task.value
      }
    }
    #expect(checkout.gateway.attempts == 2, "\(Self.noRetryAfterCancel)")
    #expect(checkout.gateway.requestsRunning == 0, "\(Self.nothingRunning)")
  }

  @Test("Cancelling at any moment, 200 times over, always ends in CancellationError")
  func cancellingAtAnyMoment() async throws {
    let checkout = Self.makeCheckout([.hangs])

    for round in 0..<200 {
      let task = Task { try await checkout.pay(cents: Self.cents, orderID: "K\(round)") }
      for _ in 0..<(round % 7) { await Task.yield() }
      task.cancel()

      let outcome = try await withDeadline(
        .seconds(2), "pay(cents:orderID:)", hint: Self.lostCancel
      ) {
        await task.result
      }
      guard case .failure(let error) = outcome, error is CancellationError else {
        Issue.record("round \(round): \(Self.throwsCancellationError); got \(outcome)")
        break
      }
    }
    #expect(checkout.gateway.requestsRunning == 0, "\(Self.nothingRunning)")
  }

  @Test("A cancel from another thread while the gateway's answer is resuming the task gets through")
  func cancelWhileTheAnswerResumes() async throws {
    for delay in [20, 50, 100, 200, 400] {
      let checkout = Self.makeCheckout([.approves(.later(.milliseconds(delay)))])
      let (outcome, raced) = try await withCancellationRacingResume(
        .seconds(3), "pay(cents:orderID:)", hint: Self.hint
      ) {
        let outcome = await Result {
          try await checkout.pay(cents: Self.cents, orderID: "L\(delay)")
        }
        return (outcome, Task.isCancelled)
      }
      switch outcome {
      case .success(let receipt): #expect(receipt.cents == Self.cents)
      case .failure(let error):
        #expect(error is CancellationError, "\(Self.throwsCancellationError); got \(error)")
      }
      if raced { return }
    }
    Issue.record("the test could not cancel the task while the gateway's answer resumed it")
  }

  @Test("Cancelling just as the receipt arrives, 200 times over, never resumes twice")
  func cancellingAsTheReceiptArrives() async throws {
    let checkout = Self.makeCheckout([.approves()])

    for round in 0..<200 {
      let task = Task { try await checkout.pay(cents: Self.cents, orderID: "M\(round)") }
      for _ in 0..<(round % 5) { await Task.yield() }
      guard cancelOrReportLockedResume(task, "pay(cents:orderID:)") else { return }

      let outcome = try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.hint) {
        await task.result
      }
      switch outcome {
      case .success(let receipt): #expect(receipt.cents == Self.cents)
      case .failure(let error):
        #expect(error is CancellationError, "\(Self.throwsCancellationError); got \(error)")
      }
    }
    #expect(checkout.gateway.requestsRunning == 0, "\(Self.nothingRunning)")
  }
}
