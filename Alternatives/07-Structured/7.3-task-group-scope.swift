import CoroutineKit
import Synchronization

// The same scope, built on a task group: one root task runs a discarding task group, and
// `launch` hands it work through a stream. Cancelling the scope ends the stream; the root
// then cancels the group, and every child with it. The tasks belong to the group, so no
// dictionary of tasks is needed, only a count.

final class TaskScope: Sendable {
  private typealias Work = @Sendable () async -> Void

  /// Shared with the root task, which must not hold the scope itself.
  private final class Shared: Sendable {
    let state = Mutex((running: 0, cancelled: false))
  }

  private let shared = Shared()
  private let works: AsyncStream<Work>.Continuation

  init() {
    let (stream, works) = AsyncStream.makeStream(of: Work.self)
    self.works = works
    let shared = shared
    Task {
      await withDiscardingTaskGroup { group in
        for await work in stream {
          group.addTask {
            await work()
            shared.state.withLock { $0.running -= 1 }
          }
        }
        // The scope was cancelled (or let go): so is everything it still runs.
        group.cancelAll()
      }
    }
  }

  deinit {
    cancel()
  }

  func launch(_ work: @escaping @Sendable () async -> Void) {
    let accepted = shared.state.withLock { state in
      guard !state.cancelled else { return false }
      state.running += 1
      // Under the lock, so that cancel() cannot end the stream in between.
      works.yield(work)
      return true
    }
    if !accepted {
      // A cancelled scope still runs what it is given, cancelled from the start.
      Task {
        withUnsafeCurrentTask { $0?.cancel() }
        await work()
      }
    }
  }

  func cancel() {
    shared.state.withLock { state in
      state.cancelled = true
      works.finish()
    }
  }

  var isCancelled: Bool { shared.state.withLock { $0.cancelled } }

  var runningCount: Int { shared.state.withLock { $0.running } }
}
