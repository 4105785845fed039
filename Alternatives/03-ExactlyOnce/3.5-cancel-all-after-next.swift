/// Thrown by ``withTimeout(_:clock:operation:)`` when the limit passes before the operation
/// finishes.
struct TimeoutError: Error, Equatable, CustomStringConvertible {
  /// The limit that passed.
  var limit: Duration

  var description: String { "the operation did not finish within \(limit)" }
}

/// Runs `operation` and returns its result, unless `limit` passes first: then the
/// operation is cancelled and this throws ``TimeoutError``. Either way, nothing it started
/// is still running when it returns.
///
/// - Parameters:
///   - limit: How long the operation may take.
///   - clock: The clock that measures `limit`; tests pass one they can watch.
func withTimeout<Value: Sendable, C: Clock<Duration>>(
  _ limit: Duration,
  clock: C = ContinuousClock(),
  operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
  try await withThrowingTaskGroup(of: Value.self) { group in
    group.addTask { try await operation() }
    group.addTask {
      try await clock.sleep(for: limit)
      throw TimeoutError(limit: limit)
    }
    // If next() throws (the timer's TimeoutError or the operation's error), the error
    // leaves the body, and a group left by an error cancels its other child itself.
    let value = try await group.next()!
    // The operation won: stop the timer, or the group would wait for it to run out.
    group.cancelAll()
    return value
  }
}
