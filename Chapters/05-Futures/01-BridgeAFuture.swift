import CoroutineKit

// The coroutine way: a coroutine blocks on the future until it has a result.
//
//     DispatchQueue.global().startCoroutine {
//       let forecast = try weather.forecast(for: "Lisbon").await()
//       show(forecast)
//     }
//
// `await()` blocks its thread, so it only works inside a coroutine; anywhere else it stops
// the program. Async code needs a way to wait that suspends instead:
//
//     let forecast = try await weather.forecast(for: "Lisbon").value

extension CoFuture where Value: Sendable {
  /// The future's value, once it has one. Throws the future's error, or
  /// `CoFutureError.cancelled` if the future was cancelled.
  ///
  /// Any number of tasks may await the same future, and each gets the same result; a future
  /// that already has a result returns it at once. Like `Task.value`, awaiting does not
  /// cancel anything: the future is shared, so one awaiter must not cancel it for the others.
  var value: Value {
    get async throws {
      // TODO: Wait for the future's result without blocking a thread, and return or throw it
      // as it is.
      throw Unfinished()
    }
  }
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
