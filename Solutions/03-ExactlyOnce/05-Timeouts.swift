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
  // A task group, not unstructured tasks: the group cannot return before every child has
  // ended, so neither the operation nor the timer can outlive this call, and cancelling
  // the caller cancels both children.
  try await withThrowingTaskGroup(of: Value.self) { group in
    group.addTask {
      try await operation()
    }
    group.addTask {
      // If the operation wins, cancelAll() below interrupts this sleep: it throws
      // CancellationError, and that error is discarded with the group.
      try await clock.sleep(for: limit)
      throw TimeoutError(limit: limit)
    }
    // The loser is cancelled on every way out: a value, the operation's error, or the
    // timer's TimeoutError. The group then waits for it to end before returning, so an
    // operation that ignores cancellation delays the timeout: operations passed here
    // must respond to cancellation (Task.sleep and withTaskCancellationHandler both do).
    defer { group.cancelAll() }
    // Both children are running, so next() returns a result or throws; it is never nil.
    guard let first = try await group.next() else { throw CancellationError() }
    return first
  }
}
