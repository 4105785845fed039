import Synchronization
import Testing
import WorkbookTesting

@testable import ExactlyOnce

@Suite("3.5 Timeouts")
struct TimeoutsTests {
  static let hint =
    "the losing child is never cancelled, or the group waits for a child that is still "
    + "running; cancel the loser as soon as the first child finishes"

  @Test("Returns the value of an operation that beats the limit, with the timer already gone")
  func operationWins() async throws {
    let clock = WatchedClock()
    let operation = WatchedOperation()
    let started = ContinuousClock.now

    let value = try await withDeadline(
      .seconds(2), "withTimeout(_:clock:operation:)", hint: Self.hint
    ) {
      try await withTimeout(.seconds(1), clock: clock) {
        try await operation.run(for: .milliseconds(50), returning: 42)
      }
    }
    let elapsed = ContinuousClock.now - started

    #expect(value == 42)
    #expect(operation.finished == 1)
    #expect(clock.sleepsStarted == 1, "the limit must be measured with the clock passed in")
    #expect(clock.sleepsRunning == 0, "the timer was still running when withTimeout returned")
    #expect(
      elapsed < .milliseconds(700), "withTimeout waited for the timer instead of cancelling it")
  }

  @Test("Returns at once when the operation does not suspend at all")
  func instantOperation() async throws {
    let clock = WatchedClock()
    let started = ContinuousClock.now

    let value = try await withDeadline(
      .seconds(2), "withTimeout(_:clock:operation:)", hint: Self.hint
    ) {
      try await withTimeout(.seconds(1), clock: clock) { "ready" }
    }
    let elapsed = ContinuousClock.now - started

    #expect(value == "ready")
    #expect(clock.sleepsRunning == 0, "the timer was still running when withTimeout returned")
    #expect(
      elapsed < .milliseconds(700), "withTimeout waited for the timer instead of cancelling it")
  }

  @Test("Throws TimeoutError when the limit passes first, with the operation cancelled and ended")
  func timeoutWins() async throws {
    let clock = WatchedClock()
    let operation = WatchedOperation()
    let started = ContinuousClock.now

    await #expect(throws: TimeoutError(limit: .milliseconds(100))) {
      try await withDeadline(.seconds(2), "withTimeout(_:clock:operation:)", hint: Self.hint) {
        try await withTimeout(.milliseconds(100), clock: clock) {
          try await operation.run(for: .seconds(10), returning: 42)
        }
      }
    }
    let elapsed = ContinuousClock.now - started

    #expect(operation.running == 0, "the operation was still running when withTimeout returned")
    #expect(operation.cancelled == 1, "the operation must be cancelled when the limit passes")
    #expect(clock.sleepsRunning == 0)
    #expect(elapsed < .milliseconds(900))
  }

  @Test("Throws the operation's own error when it fails before the limit")
  func operationFails() async throws {
    let clock = WatchedClock()
    let operation = WatchedOperation()

    await #expect(throws: WatchedOperation.Failure.self) {
      try await withDeadline(.seconds(2), "withTimeout(_:clock:operation:)", hint: Self.hint) {
        try await withTimeout(.seconds(1), clock: clock) {
          try await operation.fail(after: .milliseconds(30))
        }
      }
    }

    #expect(operation.running == 0)
    #expect(clock.sleepsRunning == 0, "the timer was still running when withTimeout returned")
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
    await eventually("the operation and the timer to start") {
      operation.started == 1 && clock.sleepsStarted == 1
    }

    task.cancel()

    await #expect(throws: CancellationError.self) {
      try await withDeadline(.seconds(2), "withTimeout(_:clock:operation:)", hint: Self.hint) {
        try await task.value
      }
    }
    #expect(operation.running == 0)
    #expect(operation.cancelled == 1)
    #expect(clock.sleepsRunning == 0)
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
        #expect(operationWins, "round \(round): expected TimeoutError, got \(value)")
      } catch is TimeoutError {
        #expect(!operationWins, "round \(round): the operation should have won")
      }
      #expect(operation.running == 0, "round \(round): the operation was still running")
      #expect(clock.sleepsRunning == 0, "round \(round): the timer was still running")
    }
  }
}

/// A continuous clock that counts its sleeps, so a test can see whether a timer is still
/// running.
final class WatchedClock: Clock {
  typealias Instant = ContinuousClock.Instant
  typealias Duration = Swift.Duration

  private let base = ContinuousClock()
  private let counts = Mutex((started: 0, ended: 0))

  var now: Instant { base.now }
  var minimumResolution: Duration { base.minimumResolution }

  /// How many sleeps have started.
  var sleepsStarted: Int { counts.withLock { $0.started } }
  /// How many sleeps have started and not yet ended, by waking or by being cancelled.
  var sleepsRunning: Int { counts.withLock { $0.started - $0.ended } }

  func sleep(until deadline: Instant, tolerance: Duration?) async throws {
    counts.withLock { $0.started += 1 }
    defer { counts.withLock { $0.ended += 1 } }
    try await base.sleep(until: deadline, tolerance: tolerance)
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

  /// Sleeps for `duration`, then returns `value`; throws CancellationError if cancelled.
  func run<Value: Sendable>(for duration: Duration, returning value: Value) async throws -> Value {
    counts.withLock { $0.started += 1 }
    defer { counts.withLock { $0.ended += 1 } }
    do {
      try await Task.sleep(for: duration)
    } catch {
      counts.withLock { $0.cancelled += 1 }
      throw error
    }
    return value
  }

  /// Sleeps for `duration`, then throws ``Failure``.
  func fail(after duration: Duration) async throws -> Int {
    _ = try await run(for: duration, returning: 0)
    throw Failure()
  }
}
