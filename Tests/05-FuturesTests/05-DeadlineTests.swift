import CoroutineKit
import Dispatch
import LegacyKit
import Testing
import WorkbookTesting

@testable import Futures

private enum QuoteError: Error, Equatable {
  case marketClosed
}

private let inTime: [CallbackScript] = [
  .synchronously, .default, .later(.milliseconds(100)), .twice,
]

private let timeoutComment = Comment(
  rawValue:
    "at the deadline, value(timeout:) must throw TimeoutError(limit:), the error withTimeout "
    + "throws, whatever the future did meanwhile")
private let valueHint =
  "value(timeout:) must resume its continuation with the future's result"
private let failureHint =
  "a future that failed in time never resumed the wait; whenSuccess only hears about "
  + "values, whenComplete hears about errors and cancellations too"
private let ignoredCancellationHint =
  "withTimeout cancelled the wait at the deadline, but waiting on the future ignores "
  + "cancellation, so withTimeout has to wait for the future anyway: in "
  + "withTaskCancellationHandler's onCancel, cancel the legacy future"
private let callerCancelledHint =
  "the caller's task was cancelled, but the wait for the future did not end; pass the "
  + "cancellation on to the legacy future (withTaskCancellationHandler, onCancel: cancel()) "
  + "so that it completes with .cancelled"

/// The contract of `CoFuture.value(timeout:)`: each path, what the caller and the future
/// see, and the test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | the future | thread, timing |
/// | --- | --- | --- | --- |
/// | completes in time | its value: `returnsTheValueInTime` | — | at once, not at a long timeout: `returnsWithoutWaitingForTheTimeout` |
/// | fails in time | its own error: `throwsTheErrorInTime` | — | — |
/// | completed on the caller's own thread | its value: `suspendsInsteadOfBlocking` | — | suspends instead of blocking: `suspendsInsteadOfBlocking` |
/// | a limit with a fraction of a second | the value of a future in time: `wholeLimit`; `TimeoutError`, not before the limit: `wholeLimit` | — | — |
/// | the deadline passes | `TimeoutError`: `timesOutAndCancels` | cancelled: `timesOutAndCancels` | at the deadline, not when the future completes later: `doesNotWaitForALateFuture` |
/// | the caller is cancelled | an error (the cancellation or the future's): `cancellingTheCallerCancelsTheFuture` | cancelled: `cancellingTheCallerCancelsTheFuture` | — |
/// | the caller was cancelled before it waits | an error: `alreadyCancelledCallerCancelsTheFuture` | cancelled: `alreadyCancelledCallerCancelsTheFuture` | — |
/// | a future that takes 1.5 s | its value: `doesNotPoll` | — | one suspension, no polling: `doesNotPoll` |
/// | cancelled by its owner | `CoFutureError.cancelled`: `cancelledByItsOwner` | — | — |
/// | cancelled after it returned | — nothing is left: the timer ends with the call | | |
@Suite("5.5 Deadline")
struct FutureDeadlineTests {
  @Test("Returns the value when the future completes in time", arguments: inTime)
  func returnsTheValueInTime(script: CallbackScript) async throws {
    let future = scriptedFuture(.success(101.5), script)

    let quote = try await withDeadline(.seconds(2), "value(timeout:)", hint: valueHint) {
      try await future.value(timeout: .seconds(1))
    }

    #expect(quote == 101.5, "a future that completes in time gives its value")
    let futureWasCancelled = future.isCanceled
    #expect(futureWasCancelled == false, "a future that completes in time is left as it is")
  }

  @Test("Returns as soon as the value arrives, not when a long timeout runs out")
  func returnsWithoutWaitingForTheTimeout() async throws {
    let future = scriptedFuture(.success(99.25), .later(.milliseconds(50)))

    let quote = try await withDeadline(
      .seconds(2), "value(timeout: .seconds(60)) of a future that completes in 50 ms",
      hint: """
        the value came in 50 ms, but the call went on waiting for its 60-second timeout: \
        whatever races the future against the clock must stop the clock's side once the value \
        is in, and not wait for it to run out
        """
    ) {
      try await future.value(timeout: .seconds(60))
    }

    #expect(quote == 99.25, "a future that completes in time gives its value")
  }

  @Test("Throws the future's own error when it fails in time", arguments: inTime)
  func throwsTheErrorInTime(script: CallbackScript) async throws {
    let future: CoPromise<Double> = scriptedFuture(.failure(QuoteError.marketClosed), script)

    await #expect(
      throws: QuoteError.marketClosed,
      "the future failed with QuoteError.marketClosed well within the limit: the caller must get that error as it is; a timeout, or any other error in its place, hides what went wrong"
    ) {
      try await withDeadline(.seconds(2), "value(timeout:)", hint: failureHint) {
        try await future.value(timeout: .seconds(1))
      }
    }
  }

  @Test("Suspends instead of blocking: the future is completed on the caller's own thread")
  func suspendsInsteadOfBlocking() async throws {
    let future = CoPromise<Double>()
    let executor = OneThreadExecutor()
    // Completed on the thread that waits, once value(timeout:) has started there: a wait
    // that blocks the thread (a semaphore with a timeout, say) never lets it run.
    completeOnThread(of: executor, afterJobs: 1) { future.success(102.25) }

    let outcome = try await withDeadline(
      .seconds(3), "value(timeout:)", hint: valueHint, on: executor
    ) {
      do {
        return Result<Double, any Error>.success(try await future.value(timeout: .seconds(1)))
      } catch {
        return .failure(error)
      }
    }

    let held = executor.longestJob
    #expect(
      held < .milliseconds(500),
      """
      value(timeout:) blocked its thread instead of suspending: it held the only thread it \
      had for \(held), while the future it waited for was completed on that same thread \
      (as a future completed on the main queue would be). Likely cause: a semaphore or \
      another blocking wait with a timeout; suspend with a continuation inside withTimeout
      """)
    #expect(
      (try? outcome.get()) == 102.25,
      "the future completed in time with 102.25, but value(timeout:) ended with \(outcome)")
  }

  @Test("Waits the whole limit, fractions of a second included")
  func wholeLimit() async throws {
    // In time for a limit of 0.9 s: the answer comes at 0.05 s.
    let promise = CoPromise<Double>()
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { promise.success(99.5) }
    let inTime = await Result {
      try await withDeadline(.seconds(2), "value(timeout: .milliseconds(900))", hint: valueHint) {
        try await promise.value(timeout: .milliseconds(900))
      }
    }
    if case .failure(let error as DeadlineExceeded) = inTime { throw error }
    #expect(
      (try? inTime.get()) == 99.5,
      "a future that answered after 0.05 s, well within a limit of 0.9 s, ended with \(inTime): the limit was cut short (was it rounded to whole seconds?)"
    )

    // No answer at all: the timeout comes at 0.3 s, not before.
    let start = ContinuousClock.now
    let late = await Result {
      try await withDeadline(
        .seconds(2), "value(timeout: .milliseconds(300))", hint: ignoredCancellationHint
      ) {
        try await CoPromise<Double>().value(timeout: .milliseconds(300))
      }
    }
    if case .failure(let error as DeadlineExceeded) = late { throw error }
    let waited = ContinuousClock.now - start
    #expect(
      waited >= .milliseconds(290),
      "value(timeout: .milliseconds(300)) gave up after \(waited), before its limit: a timer shorter than the limit (was it rounded to whole seconds?)"
    )
  }

  @Test("Throws TimeoutError at the deadline and cancels the future")
  func timesOutAndCancels() async throws {
    let future = CoPromise<Double>()  // never completes on its own

    await #expect(throws: TimeoutError(limit: .milliseconds(100)), timeoutComment) {
      try await withDeadline(.seconds(2), "value(timeout:)", hint: ignoredCancellationHint) {
        try await future.value(timeout: .milliseconds(100))
      }
    }

    let futureWasCancelled = future.isCanceled
    #expect(
      futureWasCancelled,
      """
      the legacy future is still running after the timeout; cancel it, unlike \
      await(timeout:), which leaves it running for nobody
      """)
  }

  @Test("Stops at the deadline, without waiting for a future that would complete later")
  func doesNotWaitForALateFuture() async throws {
    let future = scriptedFuture(.success(99.0), .later(.milliseconds(800)))

    await #expect(throws: TimeoutError(limit: .milliseconds(100)), timeoutComment) {
      try await withDeadline(.seconds(2), "value(timeout:)", hint: ignoredCancellationHint) {
        try await future.value(timeout: .milliseconds(100))
      }
    }

    let futureWasCancelled = future.isCanceled
    #expect(
      futureWasCancelled,
      """
      the legacy future was not cancelled at the deadline, so it went on running and \
      completed by itself later; the deadline has to cancel it
      """)
  }

  @Test("Cancelling the caller cancels the future")
  func cancellingTheCallerCancelsTheFuture() async throws {
    let future = CoPromise<Double>()
    // On a thread of its own, so the wait and withTimeout's timer take turns there in a
    // fixed order when both are cancelled, and a wait that blocks that thread is seen.
    let executor = OneThreadExecutor()
    let caller = Task(executorPreference: executor) {
      try await future.value(timeout: .seconds(10))
    }
    try await Task.sleep(for: .milliseconds(50))

    caller.cancel()
    let result = try await withDeadline(
      .seconds(2), "value(timeout:) after its task was cancelled", hint: callerCancelledHint,
      on: executor
    ) {
      await caller.result
    }

    #expect(throws: (any Error).self) { try result.get() }
    if case .failure(let error as TimeoutError) = result {
      Issue.record(
        """
        a cancelled caller got \(error), a timeout that never happened (the limit was 10 \
        seconds): a cancellation must end the wait with CancellationError or \
        CoFutureError.cancelled; do not turn it into a timeout
        """)
    }
    let futureWasCancelled = future.isCanceled
    #expect(futureWasCancelled, "cancelling the caller must cancel the legacy future")
  }

  @Test("A future cancelled by its owner throws CoFutureError.cancelled")
  func cancelledByItsOwner() async throws {
    let future = CoPromise<Double>()
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { future.cancel() }

    let outcome = await Result {
      try await withDeadline(.seconds(2), "value(timeout:)", hint: valueHint) {
        try await future.value(timeout: .seconds(1))
      }
    }

    switch outcome {
    case .failure(let error as DeadlineExceeded): throw error
    case .failure(let error as CoFutureError) where error == .cancelled: break
    case .failure(let error as TimeoutError):
      Issue.record(
        "a future cancelled by its owner must throw CoFutureError.cancelled, long before the deadline; it threw \(error): do not turn the future's cancellation into a timeout"
      )
    case .failure(let error):
      Issue.record(
        "a future cancelled by its owner must throw its own error, CoFutureError.cancelled; it threw \(error): CancellationError is for a cancelled task, and this caller's task was not cancelled"
      )
    case .success(let value):
      Issue.record(
        "a future cancelled by its owner must throw CoFutureError.cancelled; value(timeout:) returned \(value)"
      )
    }
  }

  @Test("A caller cancelled before it waits cancels the future too")
  func alreadyCancelledCallerCancelsTheFuture() async throws {
    let future = CoPromise<Double>()
    let caller = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      // A short limit: a wait that blocks until it passes is told so by other tests.
      return try await future.value(timeout: .seconds(1))
    }

    let result = try await withDeadline(
      .seconds(2), "value(timeout:) in a task cancelled before it began",
      likelyCause: {
        future.isCanceled
          ? "the legacy future was cancelled, so its callback ran with that answer, and the "
            + "wait did not end: the answer came before the continuation was stored (the "
            + "caller was cancelled before it began) and was lost. Store the continuation "
            + "before the future can answer, or keep an answer that comes first"
          : callerCancelledHint
      }
    ) {
      await caller.result
    }

    #expect(throws: (any Error).self) { try result.get() }
    let futureWasCancelled = future.isCanceled
    #expect(
      futureWasCancelled,
      "a caller cancelled before it began to wait must cancel the legacy future too: nobody will ever read its result, and the work it stands for goes on otherwise (a check of Task.isCancelled that throws first leaves it running)"
    )
  }

  @Test("Waits for a slow future in one suspension, without polling")
  func doesNotPoll() async throws {
    let future = CoPromise<Double>()
    let executor = OneThreadExecutor()
    DispatchQueue.global().asyncAfter(deadline: .now() + 1.5) { future.success(7.5) }

    let value = try await withDeadline(
      .seconds(5), "value(timeout:)", hint: valueHint, on: executor
    ) {
      try await future.value(timeout: .seconds(10))
    }

    #expect(value == 7.5)
    let steps = executor.jobsRun
    #expect(
      steps <= 20,
      "value(timeout:) ran \(steps) separate steps on its thread while it waited 1.5 s for the future (a Task.sleep loop looking at isCompleted?): wait in one suspension, resumed by the future's callback, beside one timer"
    )
  }
}
