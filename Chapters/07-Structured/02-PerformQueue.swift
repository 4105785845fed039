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

/// Notes kept in a `RecordContext`, whose records may only be touched on its queue.
actor NoteStore {
  let context: RecordContext

  init(context: RecordContext) {
    self.context = context
  }

  // TODO: Make the actor's methods run on `context.queue`, and only there, in order with the
  // `perform` blocks that legacy code sends to the same queue.

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
