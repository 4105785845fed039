// Chapter 7, exercise 7.3: a task that removes itself from its owner, without keeping the
// owner alive.
import Synchronization

final class Jobs: Sendable {
  private let running = Mutex<[Int: Task<Void, Never>]>([:])
  private let nextID = Atomic(0)

  func start(_ work: @escaping @Sendable () async -> Void) {
    let id = nextID.add(1, ordering: .relaxed).newValue
    running.withLock { running in
      // listing: weak-self
      let task = Task { [weak self] in
        await work()
        self?.finished(id)
      }
      // listing: end
      running[id] = task
    }
  }

  private func finished(_ id: Int) {
    _ = running.withLock { $0.removeValue(forKey: id) }
  }

  deinit {
    for task in running.withLock({ $0.values }) { task.cancel() }
  }
}
