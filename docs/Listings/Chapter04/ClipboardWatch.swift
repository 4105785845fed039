// Chapter 4, exercise 4.2: an opaque, non-Sendable token, handed back to the thread-safe
// object that issued it from a @Sendable closure, with the promise said out loud. A made-up
// clipboard and a timer, not the exercise's notification stream.
import Foundation

/// What `Clipboard.startWatching(_:)` returns: only good for handing back to the clipboard.
final class WatchToken {}

/// A legacy clipboard. Safe to use from any thread; it predates Sendable.
final class Clipboard: @unchecked Sendable {
  private let lock = NSLock()
  private var handlers: [ObjectIdentifier: (String) -> Void] = [:]

  func startWatching(_ handler: @escaping (String) -> Void) -> WatchToken {
    let token = WatchToken()
    lock.withLock { handlers[ObjectIdentifier(token)] = handler }
    return token
  }

  func stopWatching(_ token: WatchToken) {
    _ = lock.withLock { handlers.removeValue(forKey: ObjectIdentifier(token)) }
  }
}

/// Logs what is copied during the next minute.
func watchForAMinute(_ clipboard: Clipboard) {
  // listing: token
  nonisolated(unsafe) let token = clipboard.startWatching { text in
    // listing: elide // …
    print("copied:", text)
    // listing: show
  }
  DispatchQueue.global().asyncAfter(deadline: .now() + 60) {
    clipboard.stopWatching(token)  // a @Sendable closure: it may capture only Sendable values
  }
  // listing: end
}
