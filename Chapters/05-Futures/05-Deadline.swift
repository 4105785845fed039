import CoroutineKit

// The coroutine way: wait at most a second for the quote.
//
//     DispatchQueue.global().startCoroutine {
//       do {
//         let quote = try quotes.latestQuote(for: "ACME").await(timeout: .seconds(1))
//         show(quote)
//       } catch CoFutureError.timeout {
//         showStaleQuote()  // …while the request goes on running, for nobody
//       }
//     }

/// Thrown by `withTimeout(_:operation:)` when the time limit passes first.
struct TimeoutError: Error, Equatable {
  /// The limit that passed.
  var limit: Duration
}

/// Runs `operation`, racing it against a clock: returns its result if it finishes within
/// `limit`, and otherwise cancels it and throws `TimeoutError`. It does not return before the
/// operation has ended, so nothing it started outlives the call.
///
/// Given: you wrote this in exercise 3.5. Each chapter is a module of its own, so here is a
/// copy to use; it is not part of this exercise.
func withTimeout<T: Sendable>(
  _ limit: Duration, operation: @escaping @Sendable () async throws -> T
) async throws -> T {
  try await withThrowingTaskGroup(of: RaceOutcome<T>.self) { group in
    group.addTask { .finished(try await operation()) }
    group.addTask {
      try await Task.sleep(for: limit)
      return .timedOut
    }
    // Whichever finishes first decides; the other is cancelled, and the group waits for it
    // before returning.
    defer { group.cancelAll() }
    switch try await group.next() {
    case .finished(let value)?: return value
    case .timedOut?, nil: throw TimeoutError(limit: limit)
    }
  }
}

/// Who won the race in `withTimeout(_:operation:)`.
private enum RaceOutcome<T: Sendable>: Sendable {
  case finished(T)
  case timedOut
}

extension CoFuture where Value: Sendable {
  /// The future's value, if it has one within `timeout`. Otherwise cancels the future and
  /// throws `TimeoutError`; if the awaiting task is cancelled, cancels the future too.
  ///
  /// Unlike `await(timeout:)`, which leaves the future running, this ends it: use it for a
  /// future that is yours alone, such as the one a request has just returned.
  func value(timeout: Duration) async throws -> Value {
    // TODO: Wait at most `timeout` for the future's result, as documented above: at the
    // deadline, or when the waiting task is cancelled, the future is cancelled and the call
    // ends at once.
    throw Unfinished()
  }
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
