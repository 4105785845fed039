import LegacyKit

/// Asks `greeter` for a greeting for `name` and returns it once it has arrived.
func greeting(for name: String, from greeter: Greeter) async -> String {
  // The unchecked variant: no run-time bookkeeping, so a missing or double resume is not
  // reported. Fine once the checked version has proved the handler runs exactly once.
  await withUnsafeContinuation { continuation in
    greeter.greet(name) { greeting in
      continuation.resume(returning: greeting)
    }
  }
}
