import Dispatch
import LegacyKit
import Synchronization
import Testing
import WorkbookTesting

@testable import ExactlyOnce

/// The contract of `withTimeout(_:clock:operation:)`: each path, what the caller sees, and the test
/// that checks it (— where a column does not apply, and why).
///
/// | path | result, error | children (operation, timer) | clock, timing |
/// | --- | --- | --- | --- |
/// | the operation beats the limit | its value: `operationWins` | the timer gone at return, however slow to end: `operationWins` | the clock passed in; the timer cancelled, not slept out: `operationWins` |
/// | the operation does not suspend | its value: `instantOperation` | — | the timer cancelled, not slept out: `instantOperation` |
/// | the limit passes first | `TimeoutError`: `timeoutWins` | the operation cancelled and ended: `timeoutWins` | the timer sleeps for the limit: `timeoutWins` |
/// | the limit passes around an operation slow to stop | `TimeoutError`, once it has ended: `timeoutAroundASlowOperation` | — | — |
/// | the operation fails | its own error: `operationFails` | — | the timer cancelled, not slept out: `operationFails` |
/// | the operation throws CancellationError by itself, nobody cancelled | that error, at once, not a TimeoutError once the limit has passed: `operationThrowsCancellation` | — | the timer cancelled, not slept out: `operationThrowsCancellation` |
/// | a limit of zero, or below | `TimeoutError` with that limit: `limitAlreadyPassed` | the operation cancelled and ended: `limitAlreadyPassed` | — |
/// | the limit passes and the operation answers its cancel with an error of its own | `TimeoutError`, not that error: `timeoutOverTheOperationsOwnError` | — | — |
/// | the caller cancelled before the call | `CancellationError`: `callerCancelledBeforeTheCall` | nothing left running: `callerCancelledBeforeTheCall` | — |
/// | the caller cancelled | `CancellationError`: `callerCancelled` | both children cancelled: `callerCancelled` | — |
/// | the caller cancelled around a slow operation | `CancellationError`, not a spurious `TimeoutError`: `callerCancelledAroundASlowOperation` | — | — |
/// | the caller cancelled around an operation that returns its value all the same | — the value or `CancellationError`: the operation decided what its cancel means | | |
/// | the caller cancelled once the operation has its value, while the timer ends | — the value or `CancellationError`: both keep a promise (the work was done; the caller asked to stop), so neither is required | | |
/// | races won by either side, 50 times | — | no child left running: `manyRaces` | — |
/// | two calls at once | — each call has a task group of its own | | |
@Suite("3.5 Timeouts")
struct TimeoutsTests {
  static let hint =
    "the losing child is never cancelled, or the group waits for a child that is still "
    + "running; cancel the loser as soon as the first child finishes"

  /// The cause of a timed-out call, from what the fakes saw: when the timer has run out and
  /// the operation never saw a cancel, either nothing cancelled it, or it runs in a task of
  /// its own that the group's cancellation cannot reach.
  static func likelyCause(clock: WatchedClock, operation: WatchedOperation) -> String {
    guard clock.sleepsStarted > 0, clock.sleepsRunning == 0, operation.running > 0,
      operation.cancelled == 0
    else { return hint }
    return
      "the limit passed, but the operation never saw a cancel: the group does not cancel "
      + "the losing child (cancelAll() once the first child finishes), or the operation runs "
      + "where the group's cancellation cannot reach it: in a task of its own (a Task {} or "
      + "Task.detached inside the child), or in the group's body instead of a child task; "
      + "call the operation directly in a child task"
  }

  static let stillRunning = "still running when withTimeout returned: a child outlived the call"

  static let callerCancelledHint =
    "cancelling the caller never reached the operation: run it as a child task of a task "
    + "group inside withTimeout, so that the caller's cancellation cancels it"

  @Test(
    "Returns the value of an operation that beats the limit, with the timer already gone",
    arguments: [Duration.zero, .milliseconds(200)])
  func operationWins(timerCancellationLag: Duration) async throws {
    // With a lag, the cancelled timer takes a moment to end: a withTimeout that does not
    // wait for it returns while it still runs, every time.
    let clock = WatchedClock(cancellationLag: timerCancellationLag)
    let operation = WatchedOperation()

    let value = try await withDeadline(
      .seconds(2), "withTimeout(_:clock:operation:)", hint: Self.hint
    ) {
      try await withTimeout(.seconds(1), clock: clock) {
        try await operation.run(for: .milliseconds(50), returning: 42)
      }
    }

    #expect(value == 42)
    #expect(operation.finished == 1)
    #expect(clock.sleepsStarted == 1, "the limit must be measured with the clock passed in")
    // With a lag, waiting for the cancelled timer is right and takes its time; a timer that
    // slept its whole limit was never cancelled. (Not the elapsed time: a busy machine makes
    // a correct answer slow too.)
    let (running, ranOut) = (clock.sleepsRunning, clock.sleepsRanOut)
    #expect(running == 0, "the timer was \(Self.stillRunning)")
    #expect(ranOut == 0, Comment(rawValue: Self.waitedForTheTimer))
  }

  static let waitedForTheTimer =
    "withTimeout waited for the timer instead of cancelling it: the timer slept its whole "
    + "limit although the operation had already finished"

  @Test("Returns at once when the operation does not suspend at all")
  func instantOperation() async throws {
    let clock = WatchedClock()

    let value = try await withDeadline(
      .seconds(2), "withTimeout(_:clock:operation:)", hint: Self.hint
    ) {
      try await withTimeout(.seconds(1), clock: clock) { "ready" }
    }

    #expect(value == "ready")
    #expect(clock.sleepsRunning == 0, "the timer was \(Self.stillRunning)")
    #expect(clock.sleepsRanOut == 0, Comment(rawValue: Self.waitedForTheTimer))
  }

  @Test("Throws TimeoutError when the limit passes first, with the operation cancelled and ended")
  func timeoutWins() async throws {
    let clock = WatchedClock()
    let operation = WatchedOperation()

    await #expect(
      throws: TimeoutError(limit: .milliseconds(100)),
      """
      the limit passed and nobody cancelled the caller's task, so the call timed out: \
      withTimeout must throw TimeoutError, even when a child ends with a CancellationError \
      (a timer that throws one once its sleep is over, or the operation that withTimeout \
      cancelled): a timer that runs out is the timeout
      """
    ) {
      try await withDeadline(
        .seconds(2), "withTimeout(_:clock:operation:)",
        likelyCause: { Self.likelyCause(clock: clock, operation: operation) }
      ) {
        try await withTimeout(.milliseconds(100), clock: clock) {
          try await operation.run(for: .seconds(10), returning: 42)
        }
      }
    }

    #expect(operation.running == 0, "the operation was \(Self.stillRunning)")
    #expect(operation.cancelled == 1, "the operation must be cancelled when the limit passes")
    #expect(clock.sleepsRunning == 0)
    // What the timer asked for, not how long the call took, which a busy machine stretches.
    let longest = clock.longestSleepAskedFor
    #expect(
      longest <= .milliseconds(110),
      "the timer slept for \(clock.longestSleepAskedFor), but the limit is 100 ms: sleep for the limit"
    )
  }

  @Test("Throws the operation's own error when it fails before the limit")
  func operationFails() async throws {
    let clock = WatchedClock()
    let operation = WatchedOperation()

    await #expect(
      throws: WatchedOperation.Failure.self,
      "the operation's own error must reach the caller: an error must not become a TimeoutError"
    ) {
      try await withDeadline(.seconds(2), "withTimeout(_:clock:operation:)", hint: Self.hint) {
        try await withTimeout(.seconds(1), clock: clock) {
          try await operation.fail(after: .milliseconds(30))
        }
      }
    }

    #expect(operation.running == 0, "the operation was \(Self.stillRunning)")
    #expect(clock.sleepsRunning == 0, "the timer was \(Self.stillRunning)")
    #expect(
      clock.sleepsRanOut == 0,
      "the operation failed after 30 ms, yet the timer slept out the whole limit of 1 second: the error reached the caller only once the limit had passed, because the timer was left running when the operation ended with an error"
    )
  }

  @Test("An operation that throws CancellationError by itself: that error, at once")
  func operationThrowsCancellation() async throws {
    // Nobody cancels anything: the operation's own CancellationError (a legacy call that
    // reports its own cancel so) is its result, like any other error.
    let clock = WatchedClock()

    await #expect(
      throws: CancellationError.self,
      "the operation threw CancellationError by itself after 30 ms, with the caller not cancelled and the limit a second away: that is its result, to be passed on at once, not set aside as the loser's error while the timer runs out"
    ) {
      try await withDeadline(.seconds(2), "withTimeout(_:clock:operation:)", hint: Self.hint) {
        try await withTimeout(.seconds(1), clock: clock) { () async throws -> Int in
          try await Task.sleep(for: .milliseconds(30))
          throw CancellationError()
        }
      }
    }
    #expect(clock.sleepsRanOut == 0, "the timer slept out the limit: \(Self.stillRunning)")
  }

  @Test(
    "A limit of zero, or one already past, throws TimeoutError and cancels the operation",
    arguments: [Duration.zero, .milliseconds(-5)])
  func limitAlreadyPassed(limit: Duration) async throws {
    let clock = WatchedClock()
    let operation = WatchedOperation()

    await #expect(
      throws: TimeoutError(limit: limit),
      "a limit of \(limit) has passed as soon as the call starts: the 10-second operation must be cancelled and TimeoutError thrown; a limit of zero is no limit only in some legacy APIs, not here"
    ) {
      try await withDeadline(
        .seconds(2), "withTimeout(_:clock:operation:)",
        likelyCause: {
          clock.sleepsStarted == 0
            ? "the limit of \(limit) had passed before the call began, yet no timer was started "
              + "and the operation ran on: a limit of zero or below was taken to mean no limit"
            : Self.likelyCause(clock: clock, operation: operation)
        }
      ) {
        try await withTimeout(limit, clock: clock) {
          try await operation.run(for: .seconds(10), returning: 42)
        }
      }
    }
    #expect(operation.running == 0, "the operation was \(Self.stillRunning)")
  }

  @Test("When the limit passes, TimeoutError wins over the error the cancelled operation throws")
  func timeoutOverTheOperationsOwnError() async throws {
    // A legacy operation answers a cancel with an error of its own: that error is what the
    // timeout's cancel caused, not what went wrong.
    struct LegacyCancelled: Error {}
    let clock = WatchedClock()
    let operation = WatchedOperation()

    await #expect(
      throws: TimeoutError(limit: .milliseconds(100)),
      "the limit passed, and the operation answered its cancel with an error of its own: that error only echoes the timeout's cancel, so the caller must get TimeoutError"
    ) {
      try await withDeadline(.seconds(2), "withTimeout(_:clock:operation:)", hint: Self.hint) {
        try await withTimeout(.milliseconds(100), clock: clock) { () async throws -> Int in
          do {
            return try await operation.run(for: .seconds(10), returning: 42)
          } catch {
            throw LegacyCancelled()
          }
        }
      }
    }
    #expect(operation.running == 0, "the operation was \(Self.stillRunning)")
  }

  @Test("Cancelling the caller cancels the operation and the timer, and throws CancellationError")
  func callerCancelled() async throws {
    let clock = WatchedClock()
    let operation = WatchedOperation()
    let task = Task {
      try await withTimeout(.seconds(5), clock: clock) {
        try await operation.run(for: .seconds(10), returning: 42)
      }
    }
    await eventually("the operation and the timer (sleeping on the clock passed in) to start") {
      operation.started == 1 && clock.sleepsStarted == 1
    }

    task.cancel()

    await #expect(throws: CancellationError.self, "\(Self.spuriousTimeout)") {
      try await withDeadline(
        .seconds(2), "withTimeout(_:clock:operation:)", hint: Self.callerCancelledHint
      ) {
        try await task.value
      }
    }
    #expect(operation.running == 0, "the operation was \(Self.stillRunning)")
    #expect(operation.cancelled == 1, Comment(rawValue: Self.callerCancelledHint))
    #expect(clock.sleepsRunning == 0, "the timer was \(Self.stillRunning)")
  }

  @Test("A caller cancelled before the call throws CancellationError, and nothing is left running")
  func callerCancelledBeforeTheCall() async throws {
    let clock = WatchedClock()
    let operation = WatchedOperation()
    let task = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await withTimeout(.seconds(5), clock: clock) {
        try await operation.run(for: .seconds(10), returning: 42)
      }
    }

    await #expect(throws: CancellationError.self, "\(Self.spuriousTimeout)") {
      try await withDeadline(
        .seconds(2), "withTimeout(_:clock:operation:) called already cancelled",
        hint: Self.callerCancelledHint
      ) {
        try await task.value
      }
    }
    #expect(operation.running == 0, "the operation was \(Self.stillRunning)")
    #expect(clock.sleepsRunning == 0, "the timer was \(Self.stillRunning)")
  }

  static let spuriousTimeout =
    "the caller was cancelled before the limit, so withTimeout must throw CancellationError; "
    + "a TimeoutError here is spurious: a cancellation must not become a TimeoutError (a "
    + "cancelled timer must not claim that the limit passed)"

  @Test(
    "Cancelling the caller around an operation slow to honour it throws CancellationError, not a spurious TimeoutError"
  )
  func callerCancelledAroundASlowOperation() async throws {
    // The operation takes 200 ms to act on its cancellation, so the cancelled timer ends
    // first, every time: a timer that turns its cancellation into TimeoutError is seen.
    let clock = WatchedClock()
    let operation = WatchedOperation()
    let task = Task {
      try await withTimeout(.seconds(5), clock: clock) {
        try await operation.run(
          for: .seconds(10), returning: 42, whenCancelled: .throwsAfter(.milliseconds(200)))
      }
    }
    await eventually("the operation and the timer (sleeping on the clock passed in) to start") {
      operation.started == 1 && clock.sleepsStarted == 1
    }

    task.cancel()

    let outcome = try await withDeadline(
      .seconds(2), "withTimeout(_:clock:operation:)", hint: Self.callerCancelledHint
    ) {
      await task.result
    }
    switch outcome {
    case .failure(is CancellationError): break
    case .failure(let error as TimeoutError): Issue.record("\(Self.spuriousTimeout); got \(error)")
    case .failure(let error): Issue.record("\(Self.spuriousTimeout); got \(error)")
    case .success(let value): Issue.record("\(Self.spuriousTimeout); got the value \(value)")
    }
    #expect(operation.running == 0, "the operation was \(Self.stillRunning)")
    #expect(clock.sleepsRunning == 0, "the timer was \(Self.stillRunning)")
  }

  @Test(
    "A limit that passes around an operation slow to honour cancellation throws TimeoutError once the operation has ended",
    arguments: [
      WatchedOperation.WhenCancelled.throwsAfter(.milliseconds(200)),
      .returnsAfter(.milliseconds(200)),
    ])
  func timeoutAroundASlowOperation(whenCancelled: WatchedOperation.WhenCancelled) async throws {
    let clock = WatchedClock()
    let operation = WatchedOperation()

    let outcome: Result<Int, any Error>
    do {
      outcome = .success(
        try await withDeadline(.seconds(2), "withTimeout(_:clock:operation:)", hint: Self.hint) {
          try await withTimeout(.milliseconds(100), clock: clock) {
            try await operation.run(for: .seconds(10), returning: 42, whenCancelled: whenCancelled)
          }
        })
    } catch is DeadlineExceeded {
      return
    } catch {
      outcome = .failure(error)
    }

    switch outcome {
    case .failure(let error as TimeoutError):
      #expect(error == TimeoutError(limit: .milliseconds(100)))
    case .failure(let error as CancellationError):
      Issue.record(
        """
        the limit passed, so withTimeout must throw TimeoutError, not \(error), whichever \
        child it came from: the timer's sleep when it is cancelled, or the operation that \
        withTimeout cancelled itself; the timer that runs out is the timeout
        """)
    case .failure(let error):
      Issue.record("the limit passed, so withTimeout must throw TimeoutError; got \(error)")
    case .success(let value):
      Issue.record(
        """
        the limit passed, so withTimeout must throw TimeoutError, not return \(value), which \
        the operation produced after it had been cancelled
        """)
    }
    #expect(operation.running == 0, "the operation was \(Self.stillRunning)")
    #expect(clock.sleepsRunning == 0, "the timer was \(Self.stillRunning)")
  }

  @Test("Races won by either side, 50 times over, never leave a child running")
  func manyRaces() async throws {
    let clock = WatchedClock()
    let operation = WatchedOperation()

    for round in 0..<50 {
      let operationWins = round.isMultiple(of: 2)
      do {
        let value = try await withDeadline(
          .seconds(2), "withTimeout(_:clock:operation:)", hint: Self.hint
        ) {
          try await withTimeout(.milliseconds(operationWins ? 500 : 5), clock: clock) {
            try await operation.run(for: .milliseconds(operationWins ? 1 : 500), returning: round)
          }
        }
        #expect(
          operationWins,
          "round \(round): the limit passed, so withTimeout must throw TimeoutError; got \(value)")
      } catch is TimeoutError {
        #expect(!operationWins, "round \(round): the operation finished first and should have won")
      } catch {
        let expected =
          operationWins
          ? "the operation finished first and should have won"
          : "the limit passed, so withTimeout must throw TimeoutError"
        // Nobody cancelled this test: a CancellationError is the cancelled loser's.
        let loserError =
          error is CancellationError
          ? ": that is the error of the child that lost and was cancelled "
            + (operationWins ? "(the timer)" : "(the operation)")
            + ", and it reached the caller; the first child to end decides the answer, and "
            + "the loser's end is only waited for, not reported"
          : ""
        Issue.record("round \(round): \(expected); got \(error)\(loserError)")
      }
      #expect(operation.running == 0, "round \(round): the operation was \(Self.stillRunning)")
      #expect(clock.sleepsRunning == 0, "round \(round): the timer was \(Self.stillRunning)")
    }
  }
}

/// A continuous clock that counts its sleeps, so a test can see whether a timer is still
/// running.
final class WatchedClock: Clock {
  typealias Instant = ContinuousClock.Instant
  typealias Duration = Swift.Duration

  private let base = ContinuousClock()
  private let counts = Mutex((started: 0, ended: 0, ranOut: 0, longest: Duration.zero))
  private let cancellationLag: Duration

  /// - Parameter cancellationLag: How long a cancelled sleep goes on before it throws, as
  ///   a timer on a busy thread does: a `withTimeout` that returns without waiting for its
  ///   timer then leaves it running, every time.
  init(cancellationLag: Duration = .zero) {
    self.cancellationLag = cancellationLag
  }

  var now: Instant { base.now }
  var minimumResolution: Duration { base.minimumResolution }

  /// How many sleeps have started.
  var sleepsStarted: Int { counts.withLock { $0.started } }
  /// How many sleeps have started and not yet ended, by waking or by being cancelled.
  var sleepsRunning: Int { counts.withLock { $0.started - $0.ended } }
  /// How many sleeps ran to their deadline instead of being cancelled.
  var sleepsRanOut: Int { counts.withLock { $0.ranOut } }
  /// The longest sleep asked for, from its start to its deadline.
  var longestSleepAskedFor: Duration { counts.withLock { $0.longest } }

  func sleep(until deadline: Instant, tolerance: Duration?) async throws {
    let asked = now.duration(to: deadline)
    counts.withLock {
      $0.started += 1
      $0.longest = max($0.longest, asked)
    }
    defer { counts.withLock { $0.ended += 1 } }
    do {
      try await base.sleep(until: deadline, tolerance: tolerance)
      counts.withLock { $0.ranOut += 1 }
    } catch {
      await lag(cancellationLag)
      throw error
    }
  }
}

/// An operation that records when it starts and ends and whether it saw a cancellation.
final class WatchedOperation: Sendable {
  struct Failure: Error {}

  private let counts = Mutex((started: 0, ended: 0, cancelled: 0))

  var started: Int { counts.withLock { $0.started } }
  var finished: Int { counts.withLock { $0.ended - $0.cancelled } }
  var running: Int { counts.withLock { $0.started - $0.ended } }
  var cancelled: Int { counts.withLock { $0.cancelled } }

  /// What an operation does once it notices that it was cancelled.
  enum WhenCancelled: Sendable, CustomTestStringConvertible {
    /// Throws CancellationError at once.
    case throwsAtOnce
    /// Goes on for `lag`, then throws CancellationError.
    case throwsAfter(Duration)
    /// Goes on for `lag`, then returns its value all the same.
    case returnsAfter(Duration)

    var testDescription: String {
      switch self {
      case .throwsAtOnce: "throws CancellationError at once"
      case .throwsAfter(let lag): "throws CancellationError \(lag) after the cancel"
      case .returnsAfter(let lag): "returns its value \(lag) after the cancel"
      }
    }
  }

  /// Sleeps for `duration`, then returns `value`; if cancelled, does what `whenCancelled`
  /// says.
  func run<Value: Sendable>(
    for duration: Duration, returning value: Value, whenCancelled: WhenCancelled = .throwsAtOnce
  ) async throws -> Value {
    counts.withLock { $0.started += 1 }
    defer { counts.withLock { $0.ended += 1 } }
    do {
      try await Task.sleep(for: duration)
    } catch {
      counts.withLock { $0.cancelled += 1 }
      switch whenCancelled {
      case .throwsAtOnce:
        throw error
      case .throwsAfter(let delay):
        await lag(delay)
        throw error
      case .returnsAfter(let delay):
        await lag(delay)
        return value
      }
    }
    return value
  }

  /// Sleeps for `duration`, then throws ``Failure``.
  func fail(after duration: Duration) async throws -> Int {
    _ = try await run(for: duration, returning: 0)
    throw Failure()
  }
}

/// Waits for `duration` even in a cancelled task (which `Task.sleep` would not), as code
/// busy with something else does before it gets round to checking for cancellation.
func lag(_ duration: Duration) async {
  guard duration > .zero else { return }
  await withCheckedContinuation { continuation in
    DispatchQueue.global().asyncAfter(deadline: .now() + duration.timeInterval) {
      continuation.resume()
    }
  }
}
