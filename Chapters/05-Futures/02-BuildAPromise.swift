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
    /// The awaiters suspended until there is a result, by the id each one got on arrival.
    var waiting: [Int: CheckedContinuation<Value, any Error>] = [:]
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
    // TODO: Implement `complete(with:)` and `value` below, keeping everything in `state`, as
    // documented above: the first result wins and reaches every awaiter exactly once, early or
    // late. An awaiter whose task is cancelled, at any moment, throws `CancellationError` at
    // once and leaves nothing in `waiting`.
    return false
  }

  /// The promise's value, once it has one; throws its error, or `CancellationError` if the
  /// awaiting task is cancelled first.
  var value: Value {
    get async throws {
      throw Unfinished()  // see the TODO above
    }
  }
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
