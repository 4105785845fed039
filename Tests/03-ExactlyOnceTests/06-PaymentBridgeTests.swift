import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import ExactlyOnce

/// The contract of `pay(cents:orderID:)`: each path, what the caller and the gateway see,
/// and the test that checks it (— where a column does not apply, and why). "At return": read
/// in the job `pay` returns in, before anything else runs (`payAndLook`). Tests whose name
/// is in the contract file are in `06-PaymentBridgeContractTests.swift`.
///
/// | path | result, error | attempts, key, charges | requests running | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | approved at once | the receipt: `approvedAtOnce` | 1 attempt, the order's key, 1 charge: `approvedAtOnce` | none at return: `approvedAtOnce` | any thread, inside the call, later: `approvedAtOnce` |
/// | unavailable, then approved | the receipt: `retriesWhileUnavailable` | 3 attempts, one key, 1 charge: `retriesWhileUnavailable` | — | no sleep on its thread between attempts (or anywhere): `neverSleepsOnItsThread` |
/// | attempts ending differently (a time-out, then unavailable; unavailable, then time-outs) | the last attempt's error: `lastErrorWins` | — | — | — |
/// | a pause of its own between attempts, its cancel swallowed (`try? await Task.sleep`) | — not caught: the cancel that the pause swallows starts one more attempt, which its onCancel ends at once; the solution retries at once, so the attempts and the error are the same, and only the moment the second attempt started differs | | | |
/// | unavailable every time | `.unavailable`: `givesUpWhenUnavailable` | exactly maxAttempts: `givesUpWhenUnavailable` | — | — |
/// | declined | `.declined`: `declinedIsFinal` | 1 attempt, no charge: `declinedIsFinal` | — | — |
/// | maxAttempts 0 | the program stops: `noAttemptAllowedIsRefused` | — | — | — |
/// | answer lost (charged) | the receipt of the retry: `lostAnswerTimesOut` | 2 attempts, 1 charge: `lostAnswerTimesOut` | the lost one cancelled, one at a time, none at return: `lostAnswerTimesOut` | — |
/// | no answer, ever | `.timedOut`: `everyAttemptTimesOut` | maxAttempts: `everyAttemptTimesOut` | one at a time, none at return: `everyAttemptTimesOut` | — |
/// | every answer sent twice | one resume: `answersTwice` | — | — | — |
/// | cancelled before the call | `CancellationError`: `alreadyCancelled` | at most 1, no charge: `alreadyCancelled` | none at return: `alreadyCancelled` | — |
/// | cancelled while waiting | `CancellationError`: `cancellingStopsThePayment` | no other: `cancellingStopsThePayment` | none at return: `cancellingStopsThePayment` | the cancel answered inside the call, soon, later: `cancellingStopsThePayment` |
/// | cancelled as an attempt answers .unavailable | `CancellationError`: `cancelBetweenAttempts` | no attempt after the cancel: `cancelBetweenAttempts` | — | — |
/// | cancelled while a retry is submitted | `CancellationError`: `cancelWhileSubmittingARetry` | 2: `cancelWhileSubmittingARetry` | none at return: `cancelWhileSubmittingARetry` | — |
/// | cancelled once the gateway has its answer, before the handler runs | the receipt or `CancellationError`, never a wait for a `.cancelled` that cannot come: `cancelWhileTheAnswerIsHandedOver` | after `.unavailable`, no other attempt: `cancelWhileTheAnswerIsHandedOver` | — | — |
/// | cancelled as the receipt resumes | the receipt or `CancellationError`: `cancelWhileTheAnswerResumes`, `cancellingAsTheReceiptArrives` | — | none: `cancellingAsTheReceiptArrives` | no deadlock with `onCancel`: `cancelWhileTheAnswerResumes` |
/// | cancelled at any moment | `CancellationError`: `cancellingAtAnyMoment` | — | none: `cancellingAtAnyMoment` | — |
/// | cancelled between a look for an earlier cancel and the store of the request | — the gap lies between two lock steps of the answer's own that call nothing the test can pause; `cancellingAtAnyMoment` lands there only by chance, as in 3.4 (not caught) | | | |
/// | slow gateway | the receipt: `slowGateway` | — | — | a 2.5 s answer blocks no thread: `slowGateway` |
/// | two payments at once, or one after another | — each call is a payment of its own, with nothing shared but the gateway (the rounds of `cancellingAtAnyMoment` pay one order after another) | | | |
@Suite("3.6 Payment bridge (challenge)")
struct PaymentBridgeTests {
  static let cents = 4_250

  /// Pays within the deadline; returns the outcome and how many requests were still running
  /// when `pay` returned (read in the same job, before anything else can run).
  static func payAndLook(
    _ checkout: Checkout, orderID: String, hint: String = hint,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> (outcome: Result<Receipt, any Error>, runningAtReturn: Int) {
    try await withDeadline(
      .seconds(2), "pay(cents:orderID:)", hint: hint, sourceLocation: sourceLocation
    ) {
      let outcome = await Result { try await checkout.pay(cents: Self.cents, orderID: orderID) }
      return (outcome, checkout.gateway.requestsRunning)
    }
  }

  static func makeCheckout(
    _ replies: [PaymentGateway.Reply], repliesTwice: Bool = false,
    cancelReply: CallbackScript = .default, maxAttempts: Int = 3,
    attemptTimeout: Duration = .seconds(10), whileSubmitting: (@Sendable () -> Void)? = nil,
    whileHandingOver: (@Sendable () -> Void)? = nil
  ) -> Checkout {
    Checkout(
      gateway: PaymentGateway(
        replies: replies, repliesTwice: repliesTwice, cancelReply: cancelReply,
        whileSubmitting: whileSubmitting, whileHandingOver: whileHandingOver),
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

    let (outcome, running) = try await Self.payAndLook(checkout, orderID: "A1")

    let receipt = try outcome.get()
    #expect(receipt.cents == Self.cents)
    #expect(receipt.idempotencyKey == checkout.idempotencyKey(for: "A1"), "\(Self.sameKey)")
    #expect(checkout.gateway.attempts == 1, "an approved payment must not be tried again")
    #expect(checkout.gateway.charges == 1)
    #expect(running == 0, "\(Self.nothingRunning)")
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

    let (outcome, running) = try await Self.payAndLook(
      checkout, orderID: "E5", hint: Self.timeoutHint)

    let receipt = try outcome.get()

    #expect(receipt.idempotencyKey == checkout.idempotencyKey(for: "E5"), "\(Self.sameKey)")
    #expect(
      checkout.gateway.charges == 1,
      "pay charged the customer \(checkout.gateway.charges) times: \(Self.sameKey)")
    #expect(checkout.gateway.attempts == 2, "an attempt that timed out must be tried again")
    #expect(
      checkout.gateway.requestsCancelled == 1,
      "the attempt that timed out must have its PaymentRequest cancelled")
    #expect(checkout.gateway.mostRequestsRunningAtOnce == 1, "\(Self.oneAtATime)")
    #expect(running == 0, "\(Self.nothingRunning)")
  }

  @Test("When every attempt times out, throws PaymentError.timedOut with no request left running")
  func everyAttemptTimesOut() async throws {
    let checkout = Self.makeCheckout([.hangs], attemptTimeout: .milliseconds(100))

    guard
      let (outcome, running) = try? await Self.payAndLook(
        checkout, orderID: "F6", hint: Self.timeoutHint)
    else { return }

    switch outcome {
    case .failure(PaymentError.timedOut): break
    case .failure(let error as CancellationError):
      Issue.record(
        Comment(
          rawValue: "every attempt timed out, so pay must throw PaymentError.timedOut; got "
            + "\(error), although nobody cancelled pay: the cancel that ended one attempt at "
            + "its time limit reached the attempts after it too, so they were cancelled before "
            + "they could run"))
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
    #expect(running == 0, "\(Self.nothingRunning)")
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
    let runningAtReturn = Locked<Int?>(nil)
    let task = Task {
      defer { runningAtReturn.withLock { $0 = checkout.gateway.requestsRunning } }
      return try await checkout.pay(cents: Self.cents, orderID: "H8")
    }
    await eventually("the first attempt to be submitted") { checkout.gateway.attempts == 1 }

    task.cancel()

    await #expect(throws: CancellationError.self, "\(Self.throwsCancellationError)") {
      try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.lostCancel) {
        try await task.value
      }
    }
    #expect(checkout.gateway.attempts == 1, "\(Self.noRetryAfterCancel)")
    #expect(runningAtReturn.value == 0, "\(Self.nothingRunning)")
  }

  @Test("A cancel that lands as an attempt answers .unavailable starts no other attempt")
  func cancelBetweenAttempts() async throws {
    // Everything runs on one thread, in order: the gateway's .unavailable answer resumes
    // the attempt and, right behind it, before pay can go on, the caller cancels. The
    // answer is in, so the cancel finds no request to stop: only pay itself can keep its
    // promise to start no other attempt.
    let executor = OneThreadExecutor()
    let payment = Locked<Task<Receipt, any Error>?>(nil)
    let gateway = Locked<PaymentGateway?>(nil)
    let attemptsAtCancel = Locked<Int?>(nil)
    let answerThenCancel = CallbackScheduler(name: "the paying task's thread, then a cancel") {
      work in
      executor.schedule {
        work()
        _ = waitOnThisThread(upTo: .seconds(1)) { payment.value != nil }
        attemptsAtCancel.withLock { $0 = gateway.value?.attempts }
        payment.value?.cancel()
      }
    }
    // An attempt after the first never answers: only a cancel ends it.
    let checkout = Self.makeCheckout([
      .unavailable(CallbackScript(timing: .scheduled(answerThenCancel))), .hangs,
    ])
    gateway.withLock { $0 = checkout.gateway }
    let task = Task(executorPreference: executor) {
      try await checkout.pay(cents: Self.cents, orderID: "N11")
    }
    payment.withLock { $0 = task }

    let outcome = try await withDeadline(
      .seconds(2), "pay(cents:orderID:)", hint: Self.lostCancel
    ) {
      await task.result
    }

    let atCancel = try #require(attemptsAtCancel.value, "the first attempt was never answered")
    let attempts = checkout.gateway.attempts
    #expect(
      attempts == atCancel,
      """
      the caller cancelled just as attempt \(atCancel) answered .unavailable, and pay still \
      started attempt \(attempts): the answer was already in, so the cancel had no request to \
      stop. Once the caller has cancelled, pay must start no other attempt, whichever moment \
      the cancel lands in
      """)
    #expect(
      throws: CancellationError.self, "\(Self.throwsCancellationError); got \(outcome)"
    ) {
      try outcome.get()
    }
  }

  @Test(
    "A cancel that lands once the gateway has its answer, before the handler runs, ends pay",
    arguments: [PaymentGateway.Reply.approves(), .unavailable()])
  func cancelWhileTheAnswerIsHandedOver(first: PaymentGateway.Reply) async throws {
    // The gateway has its answer, so the cancel stops nothing and no .cancelled answer
    // follows: the answer the handler is about to get is the last word.
    let payment = Locked<Task<Receipt, any Error>?>(nil)
    let checkout = Self.makeCheckout(
      [first, .hangs],
      whileHandingOver: {
        _ = waitOnThisThread(upTo: .seconds(1)) { payment.value != nil }
        payment.value?.cancel()
      })
    let task = Task { try await checkout.pay(cents: Self.cents, orderID: "H1") }
    payment.withLock { $0 = task }

    let outcome = try await withDeadline(
      .seconds(2), "pay(cents:orderID:)",
      hint: "the cancel came once the gateway had its answer and before the handler ran, so "
        + "it stopped nothing and no .cancelled answer follows: the answer the handler gets "
        + "is the last one, and dropping it because the task was cancelled leaves pay "
        + "waiting for ever"
    ) {
      await task.result
    }
    switch (first, outcome) {
    case (.approves, .success(let receipt)): #expect(receipt.cents == Self.cents)
    case (_, .failure(let error)):
      #expect(error is CancellationError, "\(Self.throwsCancellationError); got \(error)")
    case (_, .success(let receipt)):
      Issue.record("pay returned \(receipt) although the only answer was .unavailable")
    }
    #expect(
      checkout.gateway.attempts == 1,
      "the caller cancelled as attempt 1 answered, and pay started \(checkout.gateway.attempts - 1) more: \(Self.noRetryAfterCancel)"
    )
  }

  @Test("A gateway that answers after 2.5 seconds holds no thread while pay waits")
  func slowGateway() async throws {
    // Longer than the watchdog's patience (1.5 s): a wait that blocks a thread (a semaphore,
    // a dispatch group, a sleep loop), in this task or one it starts, is seen and named.
    let checkout = Self.makeCheckout([.approves(.later(.milliseconds(2500)))])

    let receipt = try await withDeadline(
      .seconds(6), "pay(cents:orderID:) with a gateway that answers after 2.5 seconds",
      hint: Self.hint
    ) {
      try await checkout.pay(cents: Self.cents, orderID: "P12")
    }

    #expect(receipt.cents == Self.cents)
  }

  @Test("Never puts its thread to sleep, between attempts or anywhere else")
  func neverSleepsOnItsThread() async throws {
    let executor = OneThreadExecutor()
    // Five retries: five moments to catch a sleep between attempts, however late the
    // watch gets to look on a busy machine.
    let checkout = Self.makeCheckout(
      Array(repeating: .unavailable(), count: 5) + [.approves()], maxAttempts: 6)
    let watch = await SleepWatch(watching: executor)
    defer { watch.stop() }

    let receipt = try await withDeadline(
      .seconds(2), "pay(cents:orderID:)", hint: Self.hint, on: executor
    ) {
      try await checkout.pay(cents: Self.cents, orderID: "S1")
    }

    #expect(receipt.cents == Self.cents)
    #expect(checkout.gateway.attempts == 6, "five .unavailable answers, then an approval")
    let slept = watch.longestSleep
    let milliseconds = Int(slept / .milliseconds(1))
    #expect(
      slept < .milliseconds(20),
      """
      pay(cents:orderID:) put its thread to sleep for \(milliseconds) ms while it ran \
      (usleep, Thread.sleep, a semaphore or another blocking wait, between attempts?): a \
      sleeping thread is held, not given back, and Swift's concurrency pool has only about \
      one thread per core, so every other task waits too; and a cancel that comes during \
      the sleep is noticed only after it
      """)
  }

  @Test("A task cancelled before the call charges nothing and throws CancellationError")
  func alreadyCancelled() async throws {
    let checkout = Self.makeCheckout([.approves(.later(.milliseconds(100)))])

    let runningAtReturn = Locked<Int?>(nil)
    await #expect(throws: CancellationError.self, "\(Self.throwsCancellationError)") {
      try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.lostCancel) {
        withUnsafeCurrentTask { $0?.cancel() }
        defer { runningAtReturn.withLock { $0 = checkout.gateway.requestsRunning } }
        return try await checkout.pay(cents: Self.cents, orderID: "I9")
      }
    }
    #expect(checkout.gateway.attempts <= 1, "\(Self.noRetryAfterCancel)")
    #expect(runningAtReturn.value == 0, "\(Self.nothingRunning)")
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
    let runningAtReturn = Locked<Int?>(nil)
    let task = Task {
      defer { runningAtReturn.withLock { $0 = checkout.gateway.requestsRunning } }
      return try await checkout.pay(cents: Self.cents, orderID: "J10")
    }
    payment.withLock { $0 = task }

    await #expect(throws: CancellationError.self, "\(Self.throwsCancellationError)") {
      try await withDeadline(.seconds(2), "pay(cents:orderID:)", hint: Self.lostCancel) {
        try await task.value
      }
    }
    #expect(checkout.gateway.attempts == 2, "\(Self.noRetryAfterCancel)")
    #expect(runningAtReturn.value == 0, "\(Self.nothingRunning)")
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

  @Test(
    "Gives up with the last attempt's error, whatever the ones before it were",
    arguments: [
      ([PaymentGateway.Reply.hangs, .unavailable()], PaymentError.unavailable),
      ([.unavailable(), .hangs], PaymentError.timedOut),
    ])
  func lastErrorWins(behaviours: [PaymentGateway.Reply], last: PaymentError) async throws {
    let checkout = Self.makeCheckout(behaviours, maxAttempts: 3, attemptTimeout: .milliseconds(100))

    await #expect(
      throws: last,
      "the attempts went \(behaviours) (the last one repeating), and pay must throw the last attempt's error, \(last): an earlier attempt's error says nothing about how the payment ended"
    ) {
      try await withDeadline(.seconds(3), "pay(cents:orderID:)", hint: Self.hint) {
        try await checkout.pay(cents: Self.cents, orderID: "C3b")
      }
    }
  }
}
