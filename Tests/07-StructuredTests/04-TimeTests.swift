import Testing
import WorkbookTesting

@testable import Structured

private struct Outage: Error, Equatable {
  let attempt: Int
}

private let sleepHint =
  "retrying(…) never slept on the clock it was given: wait with "
  + "Task.sleep(for: delay, clock: clock), not on another clock"

/// An operation that fails `failures` times, then returns "report", counting its calls.
/// Each call first runs `each` (an attempt that takes time on a manual clock moves it on
/// there); a failed one throws `failure(attempt)`.
private func flaky(
  failures: Int, calls: Locked<Int>, each: @escaping @Sendable () -> Void = {},
  failure: @escaping @Sendable (Int) -> any Error = { Outage(attempt: $0) }
) -> @Sendable () async throws -> String {
  {
    let attempt = calls.withLock { calls in
      calls += 1
      return calls
    }
    each()
    if attempt <= failures { throw failure(attempt) }
    return "report"
  }
}

/// Starts a retry of an operation that fails `failures` times (see `flaky`), on a
/// manual clock and on a thread of its own, so a test can see when it sleeps; returns the
/// clock, the count of calls, the executor and the retry's task.
private enum FlakyRetry {
  static func start(
    attempts: Int, firstDelay: Duration, failures: Int
  ) -> (
    ManualClock, Locked<Int>, OneThreadExecutor, Task<String, any Error>
  ) {
    let (clock, calls, executor) = (ManualClock(), Locked(0), OneThreadExecutor())
    let retry = Task(executorPreference: executor) {
      try await retrying(
        attempts: attempts, firstDelay: firstDelay, clock: clock,
        flaky(failures: failures, calls: calls))
    }
    return (clock, calls, executor, retry)
  }
}

/// An operation whose every call is a request that lasts until its task is cancelled (it
/// waits on `requests`, a clock nobody advances), then fails with its own error, or returns
/// "report" if `succeeds`; it counts its calls.
private func requestUntilCancelled(
  succeeds: Bool, calls: Locked<Int>, requests: ManualClock
) -> @Sendable () async throws -> String {
  {
    let attempt = calls.withLock { calls in
      calls += 1
      return calls
    }
    try? await Task.sleep(for: .seconds(3600), clock: requests)
    if succeeds { return "report" }
    throw Outage(attempt: attempt)
  }
}

private struct StoppedEarly: Error {}

/// Returns once `retry` is asleep on `clock` after `attempt` attempts. If `retry` ends
/// instead, or never sleeps on `clock`, records why and throws: a retry that never waits,
/// waits on another clock, or blocks its thread is the bug to show.
private func asleep(
  _ clock: ManualClock, _ retry: Task<String, any Error>, on executor: OneThreadExecutor,
  after attempt: Int, sleepers: Int = 1, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
  let ended = Locked<Result<String, any Error>?>(nil)
  let watching = Task {
    let result = await retry.result
    ended.withLock { $0 = result }
  }
  defer { watching.cancel() }
  _ = await eventually(within: .seconds(2)) {
    clock.sleeperCount >= sleepers || ended.value != nil
  }
  if clock.sleeperCount >= sleepers { return }
  if let result = ended.value {
    let outcome: String
    switch result {
    case .success(let value): outcome = "returned \(value)"
    case .failure(let error): outcome = "threw \(error)"
    }
    // A wait asked for that was over before it began: a wake-up time counted from a
    // schedule fixed at the first call, not from the failure.
    let last = clock.requestedSleeps.last
    let skipped =
      last == .zero
      ? ": the last wait it asked for was 0 seconds, so the delay it computed came out as "
        + "nothing (a delay rounded to whole seconds, or built from part of the Duration, "
        + "loses a firstDelay under a second)"
      : (last.map { $0 < .zero } ?? false)
        ? ": the last wait it asked for was \(last!), already over, because its wake-up time "
          + "was counted from a schedule fixed at the first call, not from the failure; the "
          + "time the test let pass before the failure made the wait over before it began"
        : ""
    Issue.record(
      Comment(
        rawValue: "retrying(…) \(outcome) after attempt \(attempt), instead of waiting on the "
          + "clock\(skipped)"),
      sourceLocation: sourceLocation)
  } else if (executor.currentJobAge ?? .zero) >= .milliseconds(500) {
    Issue.record(
      """
      retrying(…) blocked its thread instead of suspending after attempt \(attempt) \
      (Thread.sleep, usleep or a semaphore hold the thread while they wait): wait with \
      try await Task.sleep(for: delay, clock: clock)
      """,
      sourceLocation: sourceLocation)
  } else {
    Issue.record(
      """
      retrying(…) never slept on the clock it was given after attempt \(attempt): wait with \
      Task.sleep(for: delay, clock: clock), not Task.sleep(for:) (the real clock) or another \
      clock
      """,
      sourceLocation: sourceLocation)
  }
  throw StoppedEarly()
}

/// The contract of `retrying(attempts:firstDelay:clock:operation:)`: each path, what the
/// caller and the clock see, and the test that checks it (— where a column does not apply,
/// and why).
///
/// | path | result, error | attempts | clock, timing |
/// | --- | --- | --- | --- |
/// | the first attempt succeeds | its value: `firstAttemptSucceeds` | one | no wait: `firstAttemptSucceeds` |
/// | failures, then a success | its value: `waitsAndDoubles` | — | on the given clock, twice as long each time: `waitsAndDoubles` |
/// | every attempt fails | the last attempt's error: `givesUp` | exactly `attempts` | no wait after the last: `givesUp` |
/// | cancelled while it waits | `CancellationError`: `cancellationEndsTheWait` | none after it: `cancellationEndsTheWait` | — |
/// | two retries on one clock | — | — | each its own schedule: `twoRetries` |
/// | cancelled during an attempt that fails, attempts left | `CancellationError`, `firstDelay` zero too: `cancelledDuringAFailingAttempt` | none after it: `cancelledDuringAFailingAttempt` | — |
/// | cancelled during an attempt that succeeds | its value, not `CancellationError`: `cancelledDuringASuccess` | one | — |
/// | cancelled during the last attempt, which fails | that attempt's error or `CancellationError`, both accepted: nothing was left to cut short, and "rethrows that attempt's error" and "a cancelled task throws `CancellationError`" both read on it | — | — |
/// | the operation throws `CancellationError`, its task not cancelled | — | a failed attempt, retried: `anOperationsCancellationErrorIsAFailure` | — |
/// | waits longer than minutes | — | — | still doubled, no ceiling: `longWaitsKeepDoubling` |
/// | an attempt that takes time on the clock | — | — | the wait starts when the attempt has failed, not when it began: `waitCountsFromTheFailure` |
// No test here waits for real: time moves only when a test advances the manual clock.
@Suite("7.4 Time")
struct InjectedClockTests {
  @Test("Returns at once, without waiting, when the first attempt succeeds")
  func firstAttemptSucceeds() async throws {
    let clock = ManualClock()
    let calls = Locked(0)

    let report = try await withDeadline(
      .seconds(2), "retrying(…)",
      hint: "the first attempt succeeded, so retrying(…) must return its value at once: call "
        + "operation first, and wait only after it throws"
    ) {
      try await retrying(
        attempts: 3, firstDelay: .seconds(1), clock: clock,
        flaky(failures: 0, calls: calls))
    }

    #expect(report == "report")
    #expect(calls.value == 1)
    #expect(clock.requestedSleeps == [], "nothing failed, so nothing should wait")
  }

  @Test("Waits on the clock between attempts, twice as long each time")
  func waitsAndDoubles() async throws {
    let (clock, calls, executor, retry) = FlakyRetry.start(
      attempts: 4, firstDelay: .seconds(1), failures: 3)
    defer { retry.cancel() }

    for (attempt, wait) in [(1, 1), (2, 2), (3, 4)] {
      try await asleep(clock, retry, on: executor, after: attempt)
      #expect(
        calls.value == attempt,
        Comment(
          rawValue: calls.value > attempt
            ? "attempt \(attempt + 1) started before its wait"
            : "retrying(…) was asleep after only \(calls.value) attempts, not \(attempt): it "
              + "was still in an earlier wait, longer than the test had advanced the clock by "
              + "(1, 2 and 4 seconds after attempts 1, 2 and 3)"))
      let asked = clock.requestedSleeps.last
      #expect(
        asked == .seconds(wait),
        """
        the wait after attempt \(attempt) was \(asked.map { "\($0)" } ?? "none"), not \(wait) \
        seconds: wait firstDelay first, then double the delay after each wait
        """)
      clock.advance(by: .seconds(wait) - .milliseconds(1))
      #expect(clock.sleeperCount == 1, "the wait after attempt \(attempt) ended too early")
      clock.advance(by: .milliseconds(1))
    }

    let report = try await withDeadline(
      .seconds(2), "retrying(…)",
      likelyCause: {
        let asked = clock.requestedSleeps
        return asked.isEmpty
          ? sleepHint
          : "retrying(…) is still asleep on the clock: it asked for waits of \(asked), and "
            + "the test advanced the clock by 1, 2 and 4 seconds, one after each failed "
            + "attempt; a wait longer than its turn has not ended yet"
      }
    ) {
      try await retry.value
    }
    #expect(report == "report")
    #expect(calls.value == 4)
    #expect(clock.requestedSleeps == [.seconds(1), .seconds(2), .seconds(4)])
  }

  @Test("After the last attempt, rethrows its error at once instead of waiting again")
  func givesUp() async throws {
    let (clock, calls, executor, retry) = FlakyRetry.start(
      attempts: 3, firstDelay: .milliseconds(500), failures: 10)
    defer { retry.cancel() }

    for attempt in 1...2 {
      try await asleep(clock, retry, on: executor, after: attempt)
      clock.advance(by: .seconds(10))
    }

    await #expect(throws: Outage(attempt: 3)) {
      try await withDeadline(
        .seconds(2), "retrying(…) after its last attempt",
        likelyCause: {
          let waits = clock.requestedSleeps
          return calls.value == 3 && waits.count > 2
            ? "after attempt 3 of 3 failed, it waited again (\(waits[2]) on the clock) instead "
              + "of ending with that attempt's error: attempts counts every call, the first "
              + "one included, so there is no wait after the last"
            : "it never ended after its last attempt (\(calls.value) calls, waits \(waits))"
        }
      ) { try await retry.value }
    }
    #expect(calls.value == 3)
    #expect(clock.requestedSleeps == [.milliseconds(500), .seconds(1)])
  }

  @Test("Cancelling the task ends the wait with CancellationError, and starts no attempt")
  func cancellationEndsTheWait() async throws {
    let (clock, calls, executor, retry) = FlakyRetry.start(
      attempts: 5, firstDelay: .seconds(30), failures: 10)
    try await asleep(clock, retry, on: executor, after: 1)

    retry.cancel()

    let outcome = await Result {
      try await withDeadline(
        .seconds(2), "a cancelled retrying(…)",
        likelyCause: {
          // Still a sleeper on the clock: the wait itself never saw the cancellation.
          clock.sleeperCount > 0
            ? "retrying(…) was cancelled while it waited, and its wait on the clock went on: "
              + "the cancellation never reached the sleep. Does the wait run in a task that "
              + "the caller's cancellation does not reach, such as Task.detached or a Task {} "
              + "it awaits?"
            : "the wait must end when the task is cancelled: Task.sleep throws, so use try"
        }
      ) { try await retry.value }
    }
    let attempts = calls.value
    switch outcome {
    case .failure(let error as DeadlineExceeded): throw error
    case .failure(is CancellationError): break
    case .failure(let error) where attempts == 1:
      Issue.record(
        "a retry cancelled while it waited threw \(error), the error of the attempt before the wait, not CancellationError: the cancellation was turned into a failure of the operation, so the caller cannot tell that it was cancelled"
      )
    case .failure(let error):
      Issue.record(
        "a retry cancelled while it waited went on with \(attempts - 1) more attempt(s), then threw \(error): the cancellation must end the wait and the retry with CancellationError (try? on the sleep swallows it)"
      )
    case .success(let value):
      Issue.record(
        "a retry cancelled while it waited returned \(value) instead of throwing CancellationError"
      )
    }
    #expect(calls.value == 1, "attempts went on after the task was cancelled")
  }

  @Test("Two retries on one clock each keep their own schedule")
  func twoRetries() async throws {
    let clock = ManualClock()
    let fast = Locked(0)
    let slow = Locked(0)
    let executor = OneThreadExecutor()
    let first = Task(executorPreference: executor) {
      try await retrying(
        attempts: 2, firstDelay: .seconds(1), clock: clock, flaky(failures: 1, calls: fast))
    }
    let second = Task(executorPreference: executor) {
      try await retrying(
        attempts: 2, firstDelay: .seconds(5), clock: clock, flaky(failures: 1, calls: slow))
    }
    defer {
      first.cancel()
      second.cancel()
    }
    try await asleep(clock, first, on: executor, after: 1)
    try await asleep(clock, second, on: executor, after: 1, sleepers: 2)

    clock.advance(by: .seconds(1))
    let fastReport = try await withDeadline(.seconds(2), "the 1 s retry", hint: sleepHint) {
      try await first.value
    }
    #expect(fastReport == "report")
    #expect(slow.value == 1, "the 5 s retry did not wait its 5 seconds")

    clock.advance(by: .seconds(4))
    let slowReport = try await withDeadline(.seconds(2), "the 5 s retry", hint: sleepHint) {
      try await second.value
    }
    #expect(slowReport == "report")
  }

  @Test("Cancelled during an attempt that fails, it throws CancellationError and starts no other")
  func cancelledDuringAFailingAttempt() async throws {
    for firstDelay in [Duration.seconds(30), .zero] {
      let clock = ManualClock()
      let requests = ManualClock()
      let calls = Locked(0)
      let retry = Task {
        try await retrying(
          attempts: 5, firstDelay: firstDelay, clock: clock,
          requestUntilCancelled(succeeds: false, calls: calls, requests: requests))
      }
      defer { retry.cancel() }
      guard await eventually(within: .seconds(2), { requests.sleeperCount == 1 }) else {
        Issue.record("retrying(…) never called the operation")
        return
      }

      retry.cancel()  // while attempt 1 is under way

      let outcome = await Result {
        try await withDeadline(
          .seconds(2), "a retry cancelled during an attempt",
          hint: "a retry whose task was cancelled must end, not wait on the clock"
        ) { try await retry.value }
      }
      let attempts = calls.value
      switch outcome {
      case .failure(let error as DeadlineExceeded): throw error
      case .failure(is CancellationError) where attempts == 1: continue
      case _ where attempts > 1:
        Issue.record(
          """
          a retry cancelled during attempt 1 (firstDelay \(firstDelay)) went on to make \
          \(attempts - 1) more attempt(s): a cancelled task must not start another attempt, \
          even when firstDelay is zero and there is no real wait in which to notice the \
          cancellation
          """)
      case .failure(let error):
        Issue.record(
          """
          a retry cancelled during attempt 1 of 5, which then failed, threw \(error), that \
          attempt's error, not CancellationError: the cancellation cut the retries short, and \
          reporting it as a failure of the operation hides that the task was cancelled (the \
          caller takes it for the operation failing for good)
          """)
      case .success(let value):
        Issue.record(
          "a retry cancelled during a failing attempt returned \(value), not CancellationError")
      }
      return
    }
  }

  @Test("Cancelled during an attempt that succeeds, it returns the value that arrived")
  func cancelledDuringASuccess() async throws {
    let clock = ManualClock()
    let requests = ManualClock()
    let calls = Locked(0)
    let retry = Task {
      try await retrying(
        attempts: 3, firstDelay: .seconds(30), clock: clock,
        requestUntilCancelled(succeeds: true, calls: calls, requests: requests))
    }
    defer { retry.cancel() }
    guard await eventually(within: .seconds(2), { requests.sleeperCount == 1 }) else {
      Issue.record("retrying(…) never called the operation")
      return
    }

    retry.cancel()  // while attempt 1 is under way; it succeeds all the same

    let outcome = await Result {
      try await withDeadline(
        .seconds(2), "a retry cancelled during an attempt that succeeds",
        hint: "the attempt succeeded, so retrying(…) must return its value at once"
      ) { try await retry.value }
    }
    switch outcome {
    case .failure(let error as DeadlineExceeded): throw error
    case .success(let value):
      #expect(value == "report")
    case .failure(let error):
      Issue.record(
        """
        a retry cancelled during an attempt that then succeeded threw \(error) and threw away \
        the value that had arrived: the operation did its work (a request sent, an order \
        placed), and a caller told it was cancelled believes it did not. Cancellation ends the \
        waiting between attempts; a result already in hand is still the result
        """)
    }
    #expect(calls.value == 1, "the first attempt succeeded, so there is no other")
  }

  @Test("A CancellationError from the operation, its task not cancelled, is a failed attempt")
  func anOperationsCancellationErrorIsAFailure() async throws {
    let clock = ManualClock()
    let calls = Locked(0)
    let executor = OneThreadExecutor()
    let retry = Task(executorPreference: executor) {
      // Something inside the operation was cancelled; the retry's own task was not.
      try await retrying(
        attempts: 3, firstDelay: .seconds(1), clock: clock,
        flaky(failures: 1, calls: calls, failure: { _ in CancellationError() }))
    }
    defer { retry.cancel() }
    let ended = Locked<Result<String, any Error>?>(nil)
    let watching = Task {
      let result = await retry.result
      ended.withLock { $0 = result }
    }
    defer { watching.cancel() }
    _ = await eventually(within: .seconds(2)) {
      clock.sleeperCount >= 1 || ended.value != nil
    }
    if case .failure(let error)? = ended.value {
      Issue.record(
        """
        the operation threw CancellationError on attempt 1 while the retry's own task was not \
        cancelled, and retrying(…) gave up with \(error) instead of waiting and trying again: \
        only the cancellation of the retry's task ends the retries; an error the operation \
        throws, whatever its type, is a failed attempt like any other
        """)
      return
    }
    try await asleep(clock, retry, on: executor, after: 1)

    clock.advance(by: .seconds(1))

    let report = try await withDeadline(.seconds(2), "retrying(…)", hint: sleepHint) {
      try await retry.value
    }
    #expect(report == "report")
    #expect(calls.value == 2)
  }

  @Test("Every wait is twice the one before, however long the waits get")
  func longWaitsKeepDoubling() async throws {
    let (clock, calls, executor, retry) = FlakyRetry.start(
      attempts: 12, firstDelay: .seconds(40), failures: 11)
    defer { retry.cancel() }

    var wait = Duration.seconds(40)
    for attempt in 1...11 {
      try await asleep(clock, retry, on: executor, after: attempt)
      let asked = clock.requestedSleeps.last
      guard asked == wait else {
        Issue.record(
          """
          the wait after attempt \(attempt) of 12 (firstDelay 40 seconds) was \
          \(asked.map { "\($0)" } ?? "none"), not \(wait): each wait is twice the one before, \
          however long that gets. The contract sets no ceiling, and a cap (a minute, an hour) \
          changes the schedule the caller asked for
          """)
        return
      }
      clock.advance(by: wait)
      wait *= 2
    }

    let report = try await withDeadline(.seconds(2), "retrying(…)", hint: sleepHint) {
      try await retry.value
    }
    #expect(report == "report")
    #expect(calls.value == 12)
  }

  @Test("The wait starts when an attempt has failed, however long that attempt took")
  func waitCountsFromTheFailure() async throws {
    let clock = ManualClock()
    let calls = Locked(0)
    let executor = OneThreadExecutor()
    // Each attempt takes 3 seconds on the clock (it moves the clock on itself) and fails,
    // until the third.
    let retry = Task(executorPreference: executor) {
      try await retrying(
        attempts: 3, firstDelay: .seconds(5), clock: clock,
        flaky(failures: 2, calls: calls, each: { clock.advance(by: .seconds(3)) }))
    }
    defer { retry.cancel() }

    for (attempt, wait) in [(1, 5), (2, 10)] {
      try await asleep(clock, retry, on: executor, after: attempt)
      let asked = clock.requestedSleeps.last
      guard asked == .seconds(wait) else {
        Issue.record(
          """
          attempt \(attempt) took 3 seconds on the clock and failed, and retrying(…) then \
          waited \(asked.map { "\($0)" } ?? "nothing"), not \(wait) seconds: the wait before \
          the next attempt is counted from the failure. A time to wake up fixed before the \
          attempt (or from the first call) lets a slow attempt eat into the wait
          """)
        return
      }
      clock.advance(by: .seconds(wait))
    }
    let value = try await withDeadline(.seconds(2), "retrying(…)", hint: sleepHint) {
      try await retry.value
    }
    #expect(value == "report")
  }
}
