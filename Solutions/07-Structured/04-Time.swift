import CoroutineKit

// The coroutine way: retry a request, blocking the coroutine's thread between attempts,
// twice as long each time.
//
//     queue.coroutineFuture { () -> Report in
//       var wait = firstDelay
//       for attempt in 1...attempts {
//         do { return try fetch().await() } catch where attempt < attempts {
//           Coroutine.delay(wait)
//           wait *= 2
//         }
//       }
//     }
//
// The delay is real time: a test of it waits for real, and nothing can interrupt it.

/// Runs `operation` up to `attempts` times, until it succeeds, and returns its value.
///
/// After the first failure it waits `firstDelay`, then twice as long after each failure
/// after that; after the last attempt it rethrows that attempt's error at once. It waits
/// on `clock`, so a test can pass a clock it controls; a cancelled task stops waiting and
/// throws `CancellationError`.
func retrying<Value: Sendable>(
  attempts: Int,
  firstDelay: Duration,
  clock: some Clock<Duration>,
  _ operation: @Sendable () async throws -> Value
) async throws -> Value {
  precondition(attempts > 0, "retrying needs at least one attempt")
  var delay = firstDelay
  var attempt = 1
  while true {
    do {
      return try await operation()
    } catch {
      // No wait after the last attempt: nobody would use it.
      guard attempt < attempts else { throw error }
    }
    // Suspends on the injected clock instead of blocking a thread; it throws
    // `CancellationError` when the task is cancelled, and `try` passes that on rather
    // than starting another attempt.
    try await Task.sleep(for: delay, clock: clock)
    delay *= 2
    attempt += 1
  }
}
