import Dispatch
import Foundation

/// Why a future failed without a result of its own.
public enum CoFutureError: Error, Equatable, Sendable {
  /// `cancel()` was called before the future had a result.
  case cancelled
  /// `await(timeout:)` stopped waiting; the future itself is left as it was.
  case timeout
}

/// A result that arrives later: the read-only side of a ``CoPromise``.
///
/// Legacy: a coroutine blocks on `try future.await()`; other code registers callbacks
/// (`whenComplete`) that run on whichever thread completes the future. The result is set
/// once; `cancel()` sets it to a ``CoFutureError/cancelled`` failure.
///
/// In the workbook: an `async throws` value (`try await future.value`), and Chapter 5's
/// `Promise<T>`.
public class CoFuture<Value> {
  private let lock = NSLock()
  private var storedResult: Result<Value, Error>?
  private var callbacks: [(id: Int, callback: (Result<Value, Error>) -> Void)] = []
  private var nextCallbackID = 0
  /// Cancelled when this future is: the future a `map` or `flatMap` came from.
  private var upstream: CoCancellable?

  init() {}

  /// A future that already has `result`.
  public convenience init(result: Result<Value, Error>) {
    self.init()
    storedResult = result
  }

  /// A future that already has `value`.
  public convenience init(value: Value) {
    self.init(result: .success(value))
  }

  /// A future that has already failed with `error`.
  public convenience init(error: Error) {
    self.init(result: .failure(error))
  }

  /// The result, or nil while there is none yet.
  public var result: Result<Value, Error>? {
    lock.lock()
    defer { lock.unlock() }
    return storedResult
  }

  /// True once the future has a result (a value, an error, or a cancellation).
  public var isCompleted: Bool { result != nil }

  /// True if the future was cancelled before it had another result.
  public var isCanceled: Bool {
    if case .failure(let error as CoFutureError)? = result { return error == .cancelled }
    return false
  }

  /// Blocks the current coroutine until the future has a result; returns the value or
  /// throws the error (``CoFutureError/cancelled`` after `cancel()`).
  ///
  /// Must be called inside a coroutine: elsewhere it stops the program. In the workbook:
  /// `try await future.value`.
  public func await() throws -> Value {
    let coroutine = CoroutineRunner.current(calling: "CoFuture.await()")
    let result: Result<Value, Error> = coroutine.suspend { resume in
      _ = addCallback(resume)
    }
    return try result.get()
  }

  /// Like ``await()``, but throws ``CoFutureError/timeout`` if there is no result within
  /// `timeout`. The future is not cancelled; it may still complete later.
  ///
  /// In the workbook: the Chapter 3 timeout, which cancels the loser.
  public func await(timeout: Duration) throws -> Value {
    let coroutine = CoroutineRunner.current(calling: "CoFuture.await(timeout:)")
    var callbackID: Int?
    var timer: DispatchWorkItem?
    let result: Result<Value, Error>? = coroutine.suspend { resume in
      callbackID = addCallback { resume($0) }
      let expiry = DispatchWorkItem { resume(nil) }
      timer = expiry
      DispatchQueue.global().asyncAfter(
        deadline: .now() + timeout.timeInterval, execute: expiry)
    }
    timer?.cancel()
    guard let result else {
      if let callbackID { removeCallback(callbackID) }
      throw CoFutureError.timeout
    }
    return try result.get()
  }

  /// Calls `callback` with the result: at once, on this thread, if there is one already;
  /// otherwise later, on the thread that completes the future.
  ///
  /// In the workbook: `withCheckedThrowingContinuation` around this is the bridge.
  public func whenComplete(_ callback: @escaping (Result<Value, Error>) -> Void) {
    _ = addCallback(callback)
  }

  /// Calls `callback` with the value if the future succeeds (see ``whenComplete(_:)``).
  public func whenSuccess(_ callback: @escaping (Value) -> Void) {
    whenComplete { result in
      if case .success(let value) = result { callback(value) }
    }
  }

  /// Calls `callback` with the error if the future fails or is cancelled
  /// (see ``whenComplete(_:)``).
  public func whenFailure(_ callback: @escaping (Error) -> Void) {
    whenComplete { result in
      if case .failure(let error) = result { callback(error) }
    }
  }

  /// Calls `callback` if the future is cancelled (see ``whenComplete(_:)``).
  public func whenCanceled(_ callback: @escaping () -> Void) {
    whenFailure { error in
      if let error = error as? CoFutureError, error == .cancelled { callback() }
    }
  }

  /// Fails the future with ``CoFutureError/cancelled`` unless it already has a result,
  /// and cancels the future it was made from by `map` or `flatMap`.
  ///
  /// The work that would have completed the future is not stopped; its result is ignored.
  /// In the workbook: `Task.cancel()`, which the work itself observes.
  public func cancel() {
    lock.lock()
    let source = upstream
    lock.unlock()
    if setResult(.failure(CoFutureError.cancelled)) { source?.cancel() }
  }

  /// A future of `transform` applied to this future's value; an error (thrown by
  /// `transform` or this future's) fails it. Cancelling it cancels this future.
  public func map<NewValue>(
    _ transform: @escaping (Value) throws -> NewValue
  ) -> CoFuture<NewValue> {
    let mapped = CoPromise<NewValue>()
    mapped.setUpstream(self)
    whenComplete { result in
      mapped.complete(with: result.flatMap { value in Result { try transform(value) } })
    }
    return mapped
  }

  /// A future of the future that `transform` makes from this future's value; an error
  /// fails it. Cancelling it cancels this future, or the one `transform` returned.
  public func flatMap<NewValue>(
    _ transform: @escaping (Value) throws -> CoFuture<NewValue>
  ) -> CoFuture<NewValue> {
    let chained = CoPromise<NewValue>()
    chained.setUpstream(self)
    whenComplete { result in
      do {
        let next = try transform(result.get())
        chained.setUpstream(next)
        if chained.isCanceled { next.cancel() }
        next.whenComplete { chained.complete(with: $0) }
      } catch {
        chained.fail(error)
      }
    }
    return chained
  }

  // MARK: For CoPromise and the rest of the module

  /// Sets the result unless there is one; runs the callbacks. False if it was ignored.
  func setResult(_ result: Result<Value, Error>) -> Bool {
    lock.lock()
    guard storedResult == nil else {
      lock.unlock()
      return false
    }
    storedResult = result
    let waiting = callbacks
    callbacks = []
    upstream = nil
    lock.unlock()
    for entry in waiting { entry.callback(result) }
    return true
  }

  func setUpstream(_ future: CoCancellable) {
    lock.lock()
    if storedResult == nil { upstream = future }
    lock.unlock()
  }

  /// Registers `callback`, or calls it at once if there is a result. Returns an id for
  /// `removeCallback`, or nil if it was called at once.
  private func addCallback(_ callback: @escaping (Result<Value, Error>) -> Void) -> Int? {
    lock.lock()
    if let storedResult {
      lock.unlock()
      callback(storedResult)
      return nil
    }
    nextCallbackID += 1
    let id = nextCallbackID
    callbacks.append((id, callback))
    lock.unlock()
    return id
  }

  private func removeCallback(_ id: Int) {
    lock.lock()
    callbacks.removeAll { $0.id == id }
    lock.unlock()
  }
}

extension CoFuture: @unchecked Sendable where Value: Sendable {}
