// Chapter 3, exercise 3.3: a helper that makes continuations for its callers must pass the
// caller's #function on, or every misuse message names the helper instead.
import LegacyKit

// listing: helper
/// Makes a checked continuation and logs which function is waiting on it.
func withTracedContinuation<T: Sendable>(
  isolation: isolated (any Actor)? = #isolation,
  function: String = #function,
  _ body: (CheckedContinuation<T, Never>) -> Void
) async -> T {
  print("waiting in \(function)")
  return await withCheckedContinuation(isolation: isolation, function: function, body)
}
// listing: end

// listing: use
func greeting(for name: String, from greeter: Greeter) async -> String {
  // A misuse message names greeting(for:from:), not withTracedContinuation(…).
  await withTracedContinuation { continuation in
    greeter.greet(name) { continuation.resume(returning: $0) }
  }
}
// listing: end
