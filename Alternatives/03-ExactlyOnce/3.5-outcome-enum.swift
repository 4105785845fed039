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
  // The children report which side won; the timer no longer needs to throw.
  try await withThrowingTaskGroup(of: Outcome<Value>.self) { group in
    group.addTask { .finished(try await operation()) }
    group.addTask {
      try await clock.sleep(for: limit)
      return .timedOut
    }
    // Cancel the loser however this closure ends; the group then waits for it.
    defer { group.cancelAll() }
    switch try await group.next() {
    case .finished(let value): return value
    case .timedOut: throw TimeoutError(limit: limit)
    case nil: throw CancellationError()
    }
  }
}

/// Which child of ``withTimeout(_:clock:operation:)`` finished first.
private enum Outcome<Value: Sendable>: Sendable {
  case finished(Value)
  case timedOut
}
