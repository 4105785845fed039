import Foundation

/// Something a ``CoScope`` can cancel: futures, channels, scopes, or a type of your own.
public protocol CoCancellable: AnyObject {
  func cancel()
}

extension CoCancellable {
  /// Adds this to `scope` and returns it, for chaining:
  /// `let user = queue.coroutineFuture { … }.added(to: scope)`.
  @discardableResult
  public func added(to scope: CoScope) -> Self {
    scope.add(self)
    return self
  }
}

extension CoFuture: CoCancellable {}
extension CoChannel: CoCancellable {}

/// The owner of some futures, channels and other cancellables: cancelling the scope, or
/// letting it go, cancels everything it holds.
///
/// Legacy: a view controller keeps a scope and adds the work it starts; its deinit takes
/// the scope with it, so nothing outlives the screen. Futures and channels leave the scope
/// once they complete. Only what was added is cancelled, and cancelling a future does not
/// stop the coroutine computing it.
///
/// In the workbook: structured concurrency, a task group or a type that owns its tasks and
/// cancels them on deinit.
public final class CoScope: CoCancellable {
  private let lock = NSLock()
  /// What the scope holds, by the order it was added in.
  private var items: [Int: CoCancellable] = [:]
  private var nextKey = 0
  private var cancelled = false
  private var cancelCallbacks: [() -> Void] = []

  public init() {}

  deinit {
    cancel()
  }

  /// Holds `item` until it completes or the scope is cancelled; if the scope is cancelled
  /// already, cancels `item` at once.
  public func add(_ item: CoCancellable) {
    lock.lock()
    if cancelled {
      lock.unlock()
      item.cancel()
      return
    }
    nextKey += 1
    let key = nextKey
    items[key] = item
    lock.unlock()
    if let finishing = item as? ReportsCompletion {
      finishing.whenDone { [weak self] in self?.remove(key) }
    }
  }

  /// True when the scope holds nothing.
  public var isEmpty: Bool {
    lock.lock()
    defer { lock.unlock() }
    return items.isEmpty
  }

  /// True after `cancel()`, or once the scope was deinitialised.
  public var isCanceled: Bool {
    lock.lock()
    defer { lock.unlock() }
    return cancelled
  }

  /// Cancels everything the scope holds, in the order it was added, and everything added
  /// later. Calls after the first do nothing.
  public func cancel() {
    lock.lock()
    guard !cancelled else {
      lock.unlock()
      return
    }
    cancelled = true
    let held = items.sorted { $0.key < $1.key }.map(\.value)
    items = [:]
    let callbacks = cancelCallbacks
    cancelCallbacks = []
    lock.unlock()
    for item in held { item.cancel() }
    for callback in callbacks { callback() }
  }

  /// Calls `callback` when the scope is cancelled: at once if it is already, otherwise on
  /// the thread that cancels it.
  public func whenCanceled(_ callback: @escaping () -> Void) {
    lock.lock()
    if cancelled {
      lock.unlock()
      callback()
      return
    }
    cancelCallbacks.append(callback)
    lock.unlock()
  }

  private func remove(_ key: Int) {
    lock.lock()
    let item = items.removeValue(forKey: key)
    lock.unlock()
    withExtendedLifetime(item) {}  // released here, outside the lock
  }
}

extension CoScope: @unchecked Sendable {}

/// Things that tell a scope when they are done, so it can let go of them.
protocol ReportsCompletion {
  func whenDone(_ callback: @escaping () -> Void)
}

extension CoFuture: ReportsCompletion {
  func whenDone(_ callback: @escaping () -> Void) {
    whenComplete { _ in callback() }
  }
}

extension CoChannel: ReportsCompletion {
  func whenDone(_ callback: @escaping () -> Void) {
    whenComplete(callback)
  }
}
