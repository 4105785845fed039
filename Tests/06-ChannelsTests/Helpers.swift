import CoroutineKit
import Testing
import WorkbookTesting

/// A task the test starts and looks at later: still running, or finished, and how.
final class Started<Success: Sendable>: Sendable {
  let task: Task<Success, any Error>
  private let finished: Locked<Bool>

  init(_ operation: @escaping @Sendable () async throws -> Success) {
    let finished = Locked(false)
    self.finished = finished
    task = Task {
      defer { finished.withLock { $0 = true } }
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
