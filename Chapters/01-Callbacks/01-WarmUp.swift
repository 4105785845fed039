import LegacyKit

// The callback way, as the app does it today:
//
//     greeter.greet("Ada") { greeting in
//       print(greeting)
//     }

/// Asks `greeter` for a greeting for `name` and returns it once it has arrived.
func greeting(for name: String, from greeter: Greeter) async -> String {
  // TODO: Inside `withCheckedContinuation`, call `greeter.greet(_:completion:)` and resume
  // the continuation with the greeting the completion handler receives.
  return ""
}
