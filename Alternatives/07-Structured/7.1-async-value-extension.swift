import CoroutineKit

// The same screen, with the bridge written once as an async property of CoFuture, and the
// task's end checked with `Task.checkCancellation()`.

extension CoFuture where Value: Sendable {
  /// The future's value, waited for without blocking; cancelling the task cancels it.
  var value: Value {
    get async throws {
      try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
          whenComplete { result in continuation.resume(with: result) }
        }
      } onCancel: {
        cancel()
      }
    }
  }
}

@MainActor
final class ProfileScreen {
  private(set) var status = ""

  private let lookup: @Sendable (String) -> CoFuture<String>
  private var current: Task<Void, Never>?

  init(lookup: @escaping @Sendable (String) -> CoFuture<String>) {
    self.lookup = lookup
  }

  @discardableResult
  func load(_ id: String) -> Task<Void, Never> {
    current?.cancel()
    status = "Loading…"
    let future = lookup(id)
    let task = Task {
      let shown: String
      do {
        shown = try await future.value
      } catch {
        shown = "Unavailable"
      }
      // Cancelled meanwhile, even after the future succeeded: the answer is stale.
      if Task.isCancelled { return }
      status = shown
    }
    current = task
    return task
  }
}
