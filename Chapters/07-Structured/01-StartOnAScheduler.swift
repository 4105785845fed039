import CoroutineKit

// The coroutine way: start a coroutine on the main queue, block it on the future, and
// update the screen when the future has a value.
//
//     func load(_ id: String) {
//       status = "Loading…"
//       DispatchQueue.main.startCoroutine {
//         do {
//           self.status = try self.lookup(id).await()
//         } catch {
//           self.status = "Unavailable"
//         }
//       }
//     }
//
// Nothing can cancel that coroutine, and a second load races the first. In Swift 6 it
// does not even run: the closure is main-actor isolated but runs on the coroutine's thread.

/// A screen that looks up a person's name and shows it.
@MainActor
final class ProfileScreen {
  /// What the screen shows: "" at first, "Loading…" while looking up, then the name, or
  /// "Unavailable" if the lookup failed.
  private(set) var status = ""

  private let lookup: @Sendable (String) -> CoFuture<String>

  init(lookup: @escaping @Sendable (String) -> CoFuture<String>) {
    self.lookup = lookup
  }

  /// Shows "Loading…" at once, then looks up `id` and shows the name (or "Unavailable").
  ///
  /// Returns the task doing the lookup, so callers can wait for it or cancel it. A
  /// cancelled load cancels its future and changes nothing on screen after that; a new
  /// load cancels the one before it, so a late answer never replaces a newer one.
  @discardableResult
  func load(_ id: String) -> Task<Void, Never> {
    // TODO: Do what the coroutine above did, in a task the caller can wait for or cancel, as
    // documented above: "Loading…" at once, the main actor free during the lookup, and a
    // cancelled or replaced load cancels its future and changes nothing on screen after that.
    Task {}
  }
}
