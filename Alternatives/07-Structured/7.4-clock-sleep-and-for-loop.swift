import CoroutineKit

// The same retry as a `for` loop over the attempts, sleeping through the clock itself.

func retrying<Value: Sendable>(
  attempts: Int,
  firstDelay: Duration,
  clock: some Clock<Duration>,
  _ operation: @Sendable () async throws -> Value
) async throws -> Value {
  precondition(attempts > 0, "retrying needs at least one attempt")
  var delay = firstDelay
  for _ in 1..<attempts {
    do {
      return try await operation()
    } catch {
      try await clock.sleep(for: delay)
      delay *= 2
    }
  }
  // The last attempt: its error, if any, is the caller's.
  return try await operation()
}
