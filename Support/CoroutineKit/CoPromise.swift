/// The writable side of a ``CoFuture``: whoever has the promise completes it, once.
///
/// Legacy: `success(_:)`, `fail(_:)` or `complete(with:)` set the result; the first one
/// wins and every later attempt is ignored (it returns false). Callbacks and blocked
/// coroutines are released on the thread that completes the promise.
///
/// In the workbook: Chapter 5's `Promise<T>`, built on continuations.
public final class CoPromise<Value>: CoFuture<Value> {
  /// A promise with no result yet.
  public override init() {
    super.init()
  }

  /// Completes the promise with `value`. False if it already had a result.
  @discardableResult
  public func success(_ value: Value) -> Bool {
    setResult(.success(value))
  }

  /// Fails the promise with `error`. False if it already had a result.
  @discardableResult
  public func fail(_ error: Error) -> Bool {
    setResult(.failure(error))
  }

  /// Completes the promise with `result`. False if it already had a result.
  @discardableResult
  public func complete(with result: Result<Value, Error>) -> Bool {
    setResult(result)
  }

  /// Completes the promise with `future`'s result, when there is one.
  public func complete(with future: CoFuture<Value>) {
    future.whenComplete { _ = self.setResult($0) }
  }
}

extension CoPromise: @unchecked Sendable where Value: Sendable {}
