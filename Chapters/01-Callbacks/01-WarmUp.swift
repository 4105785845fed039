import LegacyKit

// The callback way, as the app does it today:
//
//     greeter.greet("Ada") { greeting in
//       print(greeting)
//     }

/// Asks `greeter` for a greeting for `name` and returns it once it has arrived.
func greeting(for name: String, from greeter: Greeter) async -> String {
  // TODO: Return the greeting that `greeter.greet(_:completion:)` hands its completion
  // handler, suspending until it arrives.
  return ""
}
