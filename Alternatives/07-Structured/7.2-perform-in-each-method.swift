import Dispatch
import LegacyKit

// The same store without a custom executor: each method hops onto the context's queue with
// `perform`, and suspends until the block has run. The actor keeps its own executor; the
// records are still touched only on the queue, in the order of the blocks.

actor NoteStore {
  let context: RecordContext

  init(context: RecordContext) {
    self.context = context
  }

  func add(_ title: String) async -> Int {
    let context = context
    return await onQueue {
      context.insert(title)
      return context.records.count
    }
  }

  func titles() async -> [String] {
    let context = context
    return await onQueue { context.records }
  }

  /// Runs `body` on the context's queue, after the blocks already submitted to it.
  private func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
      context.perform { continuation.resume(returning: body()) }
    }
  }
}
