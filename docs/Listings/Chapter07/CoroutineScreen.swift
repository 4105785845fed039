// Chapter 7, exercise 7.1: the coroutine way, before the migration. It compiles; under
// Swift 6 its main-actor closure traps on the coroutine's thread.
import CoroutineKit
import Dispatch

@MainActor
final class LegacyProfileScreen {
  private(set) var status = ""
  private let lookup: @Sendable (String) -> CoFuture<String>

  init(lookup: @escaping @Sendable (String) -> CoFuture<String>) {
    self.lookup = lookup
  }

  func load(_ id: String) {
    // listing: coroutine
    status = "Loading…"
    DispatchQueue.main.startCoroutine {
      do { self.status = try self.lookup(id).await() } catch { self.status = "Unavailable" }
    }
    // listing: end
  }
}
