import CoroutineKit
import Synchronization
import Testing
import WorkbookTesting

/// State that a test shares with the tasks and threads it starts.
final class Shared<Value: Sendable>: Sendable {
  private let state: Mutex<Value>

  init(_ value: Value) {
    state = Mutex(value)
  }

  var value: Value { state.withLock { $0 } }

  @discardableResult
  func update<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
    state.withLock { body(&$0) }
  }
}

/// A task the test starts and looks at later: still running, or finished, and how.
final class Started<Success: Sendable>: Sendable {
  let task: Task<Success, any Error>
  private let finished: Shared<Bool>

  init(_ operation: @escaping @Sendable () async throws -> Success) {
    let finished = Shared(false)
    self.finished = finished
    task = Task {
      defer { finished.update { $0 = true } }
      return try await operation()
    }
  }

  /// True once the operation has returned or thrown.
  var isFinished: Bool { finished.value }

  func cancel() { task.cancel() }

  /// How the operation ended, waiting at most `limit` for it.
  func result(
    within limit: Duration = .seconds(2), _ name: String, hint: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Result<Success, any Error> {
    try await withDeadline(limit, name, hint: hint, sourceLocation: sourceLocation) {
      await self.task.result
    }
  }

  /// The operation's value (or its error, thrown), waiting at most `limit` for it.
  func value(
    within limit: Duration = .seconds(2), _ name: String, hint: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Success {
    try await result(within: limit, name, hint: hint, sourceLocation: sourceLocation).get()
  }
}

/// Gives `started` a moment, and expects it to be still running: it should be suspended.
func expectStillWaiting<Success>(
  _ started: Started<Success>, _ comment: Comment,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws {
  try await Task.sleep(for: .milliseconds(100))
  let stillWaiting = !started.isFinished
  #expect(stillWaiting, comment, sourceLocation: sourceLocation)
}

/// Waits until `condition` holds, checking every 5 ms for at most `limit`, and says whether
/// it did.
func eventually(
  within limit: Duration = .seconds(2), _ condition: () -> Bool
) async -> Bool {
  let clock = ContinuousClock()
  let deadline = clock.now.advanced(by: limit)
  while !condition() {
    guard clock.now < deadline else { return false }
    try? await Task.sleep(for: .milliseconds(5))
  }
  return true
}

/// The result of a coroutine's future, waiting at most `limit` for it.
func outcome<Value: Sendable>(
  of future: CoFuture<Value>, within limit: Duration = .seconds(2), _ name: String,
  hint: String, sourceLocation: SourceLocation = #_sourceLocation
) async throws -> Result<Value, any Error> {
  try await withDeadline(limit, name, hint: hint, sourceLocation: sourceLocation) {
    await withCheckedContinuation { continuation in
      future.whenComplete { continuation.resume(returning: $0) }
    }
  }
}

/// True if `elements` are in increasing order, as one producer sent them.
func isIncreasing(_ elements: [Int]) -> Bool {
  zip(elements, elements.dropFirst()).allSatisfy { $0 < $1 }
}

/// A test's own error, to throw from a loop body or a stage.
struct Boom: Error, Equatable {
  var tag = 0
}
