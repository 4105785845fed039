import Synchronization

/// State that a test shares with the fakes, tasks and threads it starts.
public final class Locked<State: Sendable>: Sendable {
  private let mutex: Mutex<State>

  public init(_ state: State) { mutex = Mutex(state) }

  /// A copy of the current state.
  public var value: State { mutex.withLock { $0 } }

  /// Reads or changes the state under the lock.
  @discardableResult
  public func withLock<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
    mutex.withLock { body(&$0) }
  }
}
