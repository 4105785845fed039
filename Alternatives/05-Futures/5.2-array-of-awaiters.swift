import Synchronization

// The coroutine way: whoever learns the answer completes a CoPromise, and coroutines block
// on it until then.
//
//     let token = CoPromise<String>()
//     loginScreen.onLogin = { newToken in token.success(newToken) }
//     DispatchQueue.global().startCoroutine {
//       let bearer = try token.await()
//       …
//     }
//
// Async code needs the same thing without blocked threads: a promise whose awaiters are
// suspended tasks, that is, stored continuations.

/// A result that arrives later: set once by whoever holds the promise, awaited by any number
/// of tasks.
///
/// The first `complete(with:)` wins and every later attempt is ignored. Awaiters that arrive
/// after that get the result at once. An awaiter whose task is cancelled throws
/// `CancellationError` straight away and the others keep waiting.
final class Promise<Value: Sendable>: Sendable {
  private struct State {
    /// The outcome, once there is one. It never changes after that.
    var result: Result<Value, any Error>?
    /// The awaiters suspended until there is a result, in the order they arrived.
    var waiting: [(id: Int, continuation: CheckedContinuation<Value, any Error>)] = []
    /// The id the next awaiter gets.
    var nextID = 0
  }

  private let state = Mutex(State())

  init() {}

  /// How many awaiters are suspended right now. For tests and debugging: once the promise is
  /// complete, or every awaiter is cancelled, it is 0 again.
  var waitingCount: Int {
    state.withLock { $0.waiting.count }
  }

  /// Completes the promise with `value`; false if it already had a result.
  @discardableResult
  func succeed(_ value: Value) -> Bool {
    complete(with: .success(value))
  }

  /// Fails the promise with `error`; false if it already had a result.
  @discardableResult
  func fail(_ error: any Error) -> Bool {
    complete(with: .failure(error))
  }

  /// Completes the promise with `result` and resumes everyone waiting. Returns false, and
  /// changes nothing, if the promise already had a result.
  @discardableResult
  func complete(with result: Result<Value, any Error>) -> Bool {
    // Decide and take everyone out in one step: of many threads completing at once, exactly
    // one sees no result, and an awaiter is either taken here or finds the result when it
    // arrives, never both and never neither.
    let awaiters: [CheckedContinuation<Value, any Error>]? = state.withLock { state in
      guard state.result == nil else { return nil }
      state.result = result
      defer { state.waiting.removeAll() }
      return state.waiting.map(\.continuation)
    }
    guard let awaiters else { return false }
    // Resume outside the lock: the lock guards the state, not the awaiters' code.
    for awaiter in awaiters {
      awaiter.resume(with: result)
    }
    return true
  }

  /// The promise's value, once it has one; throws its error, or `CancellationError` if the
  /// awaiting task is cancelled first.
  var value: Value {
    get async throws {
      // One step: either the result is there (the fast path, no continuation at all), or
      // this awaiter gets an id, so that its cancellation can find it later.
      let arrival: Arrival = state.withLock { state in
        if let result = state.result { return .ready(result) }
        state.nextID += 1
        return .waiting(id: state.nextID)
      }
      switch arrival {
      case .ready(let result): return try result.get()
      case .waiting(let id): return try await wait(as: id)
      }
    }
  }

  private enum Arrival: Sendable {
    case ready(Result<Value, any Error>)
    case waiting(id: Int)
  }

  private func wait(as id: Int) async throws -> Value {
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let outcome: Result<Value, any Error>? = state.withLock { state in
          if let result = state.result { return result }
          // Checked under the same lock that guards the store. The task's cancelled flag is
          // set before its cancellation handler runs, and the handler takes this lock: so
          // either it is set here and the awaiter stops now, or the handler runs after the
          // store and finds the continuation. No cancellation is lost in between.
          if Task.isCancelled { return .failure(CancellationError()) }
          state.waiting.append((id, continuation))
          return nil
        }
        if let outcome { continuation.resume(with: outcome) }
      }
    } onCancel: {
      // Take it out before resuming: whoever removes the continuation resumes it, so
      // `complete(with:)` and this handler can never both resume it, and nothing is left
      // behind in `waiting`.
      let awaiter: CheckedContinuation<Value, any Error>? = state.withLock { state in
        guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
        return state.waiting.remove(at: index).continuation
      }
      awaiter?.resume(throwing: CancellationError())
    }
  }
}
