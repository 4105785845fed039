import CoroutineKit
import Synchronization

// The coroutine way: a screen keeps a scope and adds the work it starts; cancelling the
// scope, or letting the screen go, cancels whatever the scope still holds.
//
//     final class SearchScreen {
//       let scope = CoScope()
//       func search(_ text: String) {
//         queue.coroutineFuture { try index.lookup(text).await() }.added(to: scope)
//       }
//     }
//
// A `Task` is not owned by anything: it runs to the end even when whoever started it is
// gone. The async version of a scope is a type that owns its tasks.

/// Owns the tasks it launches: cancelling the scope, or letting it go, cancels them all.
final class TaskScope: Sendable {
  private struct State {
    var tasks: [Int: Task<Void, Never>] = [:]
    var nextID = 0
    var cancelled = false
  }

  private let state = Mutex(State())

  init() {}

  // The owner's lifetime is the work's lifetime: when the last reference goes, so does
  // the work. That is why no task may hold the scope strongly.
  deinit {
    cancel()
  }

  /// Runs `work` in a new task that the scope owns.
  func launch(_ work: @escaping @Sendable () async -> Void) {
    state.withLock { state in
      let id = state.nextID
      state.nextID += 1
      // Made and stored under the lock: a task that finishes at once waits for the lock in
      // `finished(_:)`, so it is never removed before it was added.
      //
      // Like CoScope.add, a cancelled scope cancels what it is given. The task cancels itself
      // before the work begins: a `task.cancel()` after `Task { … }` would race with the task,
      // which may already be running the work, uncancelled, on another thread.
      let startsCancelled = state.cancelled
      let task = Task { [weak self] in
        if startsCancelled { withUnsafeCurrentTask { $0?.cancel() } }
        await work()
        self?.finished(id)
      }
      if !startsCancelled { state.tasks[id] = task }
    }
  }

  /// Cancels every task the scope owns, and every task launched later.
  func cancel() {
    let tasks = state.withLock { state in
      state.cancelled = true
      defer { state.tasks = [:] }
      return Array(state.tasks.values)
    }
    for task in tasks { task.cancel() }
  }

  /// True once the scope was cancelled.
  var isCancelled: Bool { state.withLock { $0.cancelled } }

  /// How many of the scope's tasks have not finished yet.
  var runningCount: Int { state.withLock { $0.tasks.count } }

  private func finished(_ id: Int) {
    _ = state.withLock { $0.tasks.removeValue(forKey: id) }
  }
}
