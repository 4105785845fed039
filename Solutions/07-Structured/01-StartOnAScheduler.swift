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
  /// The load in progress, so the next one can cancel it.
  private var current: Task<Void, Never>?

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
    current?.cancel()
    // Set before the task starts: the body of a new task runs later, not now.
    status = "Loading…"
    let future = lookup(id)
    // Created on the main actor, the task inherits it: the whole body runs there, so it
    // may touch `status`; it leaves the main actor free whenever it is suspended.
    let task = Task {
      do {
        let name = try await withTaskCancellationHandler {
          // Suspend instead of blocking: `await()` would stop the program outside a
          // coroutine, and would hold the main thread inside one.
          try await withCheckedThrowingContinuation { continuation in
            // `@Sendable`: written on the main actor, the callback would otherwise be
            // main-actor isolated, and trap on the thread that completes the future.
            future.whenComplete { @Sendable result in continuation.resume(with: result) }
          }
        } onCancel: {
          // The task is the handle the coroutine never had: cancelling it stops the work.
          future.cancel()
        }
        // The answer may have arrived just as the task was cancelled: show nothing stale.
        guard !Task.isCancelled else { return }
        status = name
      } catch {
        guard !Task.isCancelled else { return }
        status = "Unavailable"
      }
    }
    current = task
    return task
  }
}
