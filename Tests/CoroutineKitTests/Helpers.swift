import CoroutineKit
import Dispatch
import Foundation
import Testing
import WorkbookTesting

/// How long any one blocking step of these tests may take. Generous, because the machine
/// may be busy; a correct library needs milliseconds.
let limit = Duration.seconds(5)

/// Runs `body` in a coroutine started on `queue` and returns its result, or fails the test
/// if the coroutine is still blocked after `limit`.
func inCoroutine<Value: Sendable>(
  _ name: String = "the coroutine",
  on queue: DispatchQueue = .global(),
  sourceLocation: SourceLocation = #_sourceLocation,
  _ body: @escaping @Sendable () throws -> Value
) async throws -> Value {
  try await value(of: queue.coroutineFuture(body), name, sourceLocation: sourceLocation)
}

/// Waits, without a coroutine, for `future`'s result, or fails the test after `limit`.
func value<Value: Sendable>(
  of future: CoFuture<Value>,
  _ name: String = "the future",
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> Value {
  try await withDeadline(
    limit, name, hint: "a coroutine stayed blocked", sourceLocation: sourceLocation
  ) {
    try await withCheckedThrowingContinuation { continuation in
      future.whenComplete { continuation.resume(with: $0) }
    }
  }
}

/// Gives `future` a moment to complete, and expects it not to: the work it stands for is
/// blocked, as it should be.
func expectStillPending<Value>(
  _ future: CoFuture<Value>, _ what: Comment,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws {
  try await Task.sleep(for: .milliseconds(100))
  #expect(!future.isCompleted, what, sourceLocation: sourceLocation)
}

/// Waits until `condition` holds, or fails the test after `limit`.
func waitUntil(
  _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
  _ condition: @escaping @Sendable () -> Bool
) async throws {
  try await withDeadline(limit, what, hint: "it never happened", sourceLocation: sourceLocation) {
    while !condition() { try await Task.sleep(for: .milliseconds(5)) }
  }
}

/// Mutable state shared between a test and the threads it starts.
final class Locked<State>: @unchecked Sendable {
  private let lock = NSLock()
  private var state: State

  init(_ state: State) { self.state = state }

  var value: State { withLock { $0 } }

  @discardableResult
  func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
    lock.lock()
    defer { lock.unlock() }
    return try body(&state)
  }
}

struct Boom: Error, Equatable {}
