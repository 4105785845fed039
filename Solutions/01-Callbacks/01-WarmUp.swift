import LegacyKit

// The callback way, as the app does it today:
//
//     greeter.greet("Ada") { greeting in
//       print(greeting)
//     }

/// Asks `greeter` for a greeting for `name` and returns it once it has arrived.
func greeting(for name: String, from greeter: Greeter) async -> String {
  // The continuation suspends this function until the handler hands over the greeting;
  // whichever thread the handler runs on, resuming it makes the greeting our return value.
  await withCheckedContinuation { continuation in
    greeter.greet(name) { greeting in
      continuation.resume(returning: greeting)
    }
  }
}
