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
  // TODO: Return the operation's result or throw its error, unless `limit` passes first on
  // `clock`: then cancel it and throw `TimeoutError(limit:)`. Cancelling the caller cancels
  // the operation. Either way, return only once everything started here has ended.
  throw Unfinished()
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
