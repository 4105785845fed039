import Foundation
import LegacyKit

// An alternative to the solution: `makeStream(of:)` instead of the closure initializer, and
// the observer token kept in a small `@unchecked Sendable` box instead of a
// `nonisolated(unsafe)` local.

/// The battery's charge, in percent, after each change from now on, for as long as the caller
/// iterates: `for await level in levelChanges(of: battery) { … }`.
func levelChanges(of battery: Battery) -> AsyncStream<Int> {
  let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
  let center = battery.notificationCenter
  let token = ObserverToken(
    center.addObserver(
      forName: Battery.levelDidChangeNotification, object: battery, queue: nil
    ) { _ in
      continuation.yield(battery.level)
    })
  continuation.onTermination = { _ in
    center.removeObserver(token.value)
  }
  return stream
}

/// An observer token: never used but to hand it back to the (thread-safe) center.
private final class ObserverToken: @unchecked Sendable {
  let value: any NSObjectProtocol
  init(_ value: any NSObjectProtocol) { self.value = value }
}
