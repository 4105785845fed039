import Dispatch
import LegacyKit

// The legacy way: every use of the context goes through its queue.
//
//     context.perform {
//       context.insert(title)
//       completion(context.records.count)
//     }
//
// An actor makes the callers simple (`let count = await store.add(title)`), but by default
// an actor runs on the shared concurrency pool, and the context's records belong to its
// own queue.

/// An executor that runs every job on one serial dispatch queue, after the blocks already
/// submitted to it: the queue's order is the actor's order.
final class QueueExecutor: SerialExecutor {
  let queue: DispatchQueue

  init(queue: DispatchQueue) {
    self.queue = queue
  }

  func enqueue(_ job: consuming ExecutorJob) {
    // A job is consumed once; `UnownedJob` lets the queue's block carry it.
    let job = UnownedJob(job)
    queue.async {
      job.runSynchronously(on: self.asUnownedSerialExecutor())
    }
  }

  /// Lets `assumeIsolated` succeed in legacy blocks that already run on the queue.
  func checkIsolated() {
    dispatchPrecondition(condition: .onQueue(queue))
  }
}

/// Notes kept in a `RecordContext`, whose records may only be touched on its queue.
actor NoteStore {
  let context: RecordContext
  /// Kept for the actor's lifetime: `unownedExecutor` does not keep the executor alive.
  private let executor: QueueExecutor

  init(context: RecordContext) {
    self.context = context
    self.executor = QueueExecutor(queue: context.queue)
  }

  // Every isolated method now runs on the context's queue, so it may touch the records
  // directly, in the same order as the `perform` blocks around it.
  nonisolated var unownedExecutor: UnownedSerialExecutor {
    executor.asUnownedSerialExecutor()
  }

  /// Adds a note and returns how many notes there are now.
  func add(_ title: String) -> Int {
    context.insert(title)
    return context.records.count
  }

  /// Every note, oldest first.
  func titles() -> [String] {
    context.records
  }
}
