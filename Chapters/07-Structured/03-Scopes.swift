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
  init() {}

  // TODO: Own the tasks, as documented on each member below: `cancel()`, or letting the scope
  // go, cancels them all; work launched into a cancelled scope starts cancelled; a finished
  // task is forgotten. A task never keeps its scope alive.

  /// Runs `work` in a new task that the scope owns.
  func launch(_ work: @escaping @Sendable () async -> Void) {
    Task { await work() }
  }

  /// Cancels every task the scope owns, and every task launched later.
  func cancel() {}

  /// True once the scope was cancelled.
  var isCancelled: Bool { false }

  /// How many of the scope's tasks have not finished yet.
  var runningCount: Int { 0 }
}
