// Chapter 1, exercise 1.1: how the finished function is called.
import LegacyKit

// listing: hide
func greeting(for name: String, from greeter: Greeter) async -> String {
  await withCheckedContinuation { continuation in
    greeter.greet(name) { continuation.resume(returning: $0) }
  }
}
// listing: show

func welcome(_ greeter: Greeter) async -> String {
  // listing: call
  let text = await greeting(for: "Ada", from: greeter)  // "Hello, Ada!"
  // listing: end
  return text
}
