import CoroutineKit
import Dispatch
import Synchronization
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

  /// Runs `operation` on `executor` (see ``SettlingExecutor``).
  init(on executor: SettlingExecutor, _ operation: @escaping @Sendable () async throws -> Success) {
    let finished = Locked(false)
    self.finished = finished
    task = Task(executorPreference: executor) {
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
    do {
      return try await withDeadline(limit, name, hint: hint, sourceLocation: sourceLocation) {
        await self.task.result
      }
    } catch let error as DeadlineExceeded {
      aCallNeverReturned.withLock { $0 = true }
      throw error
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

/// Set once a send or receive in this process never returned: the tests of many tasks at
/// once would only hang on it too, and take so long that the runner stops the whole suite
/// before it can report the first, clearer failure. They end early instead.
let aCallNeverReturned = Locked(false)

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

extension Started {
  /// Starts `operation` on `executor`, and returns once it is suspended (or finished), so
  /// a `receive()` or `send(_:)` it calls is known to wait in the channel.
  static func waiting(
    on executor: SettlingExecutor, _ name: String,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable () async throws -> Success
  ) async -> Started {
    let started = Started(on: executor, operation)
    await eventually("\(name) to start waiting", sourceLocation: sourceLocation) {
      executor.isIdle
    }
    return started
  }
}

/// An element whose release a test can see: a channel that keeps an element it has handed
/// out holds its memory (a photo, a message) for as long as the channel lives.
final class Parcel: Sendable {
  let number: Int

  init(_ number: Int) { self.number = number }
}

/// A parcel watched without keeping it alive.
struct WatchedParcel {
  weak var parcel: Parcel?
}

/// True once none of `parcels` is alive any more (within two seconds): once sent and
/// received, with the test holding none of them, only the channel could keep one.
func allReleased(_ parcels: [WatchedParcel]) async -> Bool {
  await eventually(within: .seconds(2)) { parcels.allSatisfy { $0.parcel == nil } }
}
