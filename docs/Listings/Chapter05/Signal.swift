// Chapter 5, exercise 5.2: whoever removes a waiting continuation resumes it. A one-shot
// signal shows the rule on its cancellation path.
import Synchronization

final class Signal: Sendable {
  private struct State {
    var fired = false
    var waiting: [Int: CheckedContinuation<Void, any Error>] = [:]
    var nextID = 0
  }

  private let state = Mutex(State())

  func fire() {
    let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
      guard !state.fired else { return [] }
      state.fired = true
      defer { state.waiting = [:] }
      return Array(state.waiting.values)
    }
    for waiter in waiters { waiter.resume() }
  }

  func wait() async throws {
    let id: Int? = state.withLock { state in
      if state.fired { return nil }
      defer { state.nextID += 1 }
      return state.nextID
    }
    guard let id else { return }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let early: Result<Void, any Error>? = state.withLock { state in
          if state.fired { return .success(()) }
          if Task.isCancelled { return .failure(CancellationError()) }
          state.waiting[id] = continuation
          return nil
        }
        if let early { continuation.resume(with: early) }
      }
    } onCancel: {
      // listing: remove-then-resume
      state.withLock { $0.waiting.removeValue(forKey: id) }?
        .resume(throwing: CancellationError())
      // listing: end
    }
  }
}
