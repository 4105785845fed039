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
  // TODO: Retry `operation` as documented above: every wait on `clock`, each twice as long as
  // the one before, and no wait after the last attempt.
  throw Unfinished()
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
