// Chapter 7, exercise 7.4: a test with a manual clock reads like a timeline.
import Testing
import WorkbookTesting

struct Flaky: Error {}

func retrying<Value: Sendable>(
  attempts: Int, firstDelay: Duration, clock: some Clock<Duration>,
  _ operation: () async throws -> Value
) async throws -> Value {
  var delay = firstDelay
  for attempt in 1... {
    do {
      return try await operation()
    } catch {
      guard attempt < attempts else { throw error }
      try await Task.sleep(for: delay, clock: clock)
      delay *= 2
    }
  }
  fatalError("unreachable: the loop returns or throws")
}

@Test func waitsOneSecondBeforeTheSecondAttempt() async throws {
  let clock = ManualClock()
  let calls = Locked(0)
  let retry = Task {
    try await retrying(attempts: 2, firstDelay: .seconds(1), clock: clock) {
      let call = calls.withLock { count in
        count += 1
        return count
      }
      if call == 1 { throw Flaky() }
      return call
    }
  }
  // listing: timeline
  await clock.sleeping()  // the retry is waiting
  clock.advance(by: .seconds(1) - .milliseconds(1))
  #expect(clock.sleeperCount == 1)  // not yet
  clock.advance(by: .milliseconds(1))  // now the next attempt runs
  // listing: end
  #expect(try await retry.value == 2)
}
