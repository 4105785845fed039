import Foundation
import Testing

/// Runs each test of a suite on threads of its own, off Swift's concurrency pool.
///
/// The runner is synchronous: its tests build packages, run child processes and wait for
/// them, blocking the thread they run on for seconds or minutes. Swift Testing runs test
/// functions on the concurrency pool, which has one thread per core; on a 2-core machine two
/// such tests left every other test, and every test's time limit, waiting for over a minute
/// (a CI run failed so, with 9 one-line tests "over their time limit"). Under this trait a
/// blocking test occupies a thread that nothing else needs.
struct OffThePool: SuiteTrait, TestTrait, TestScoping {
  var isRecursive: Bool { true }

  func provideScope(
    for test: Test, testCase: Test.Case?,
    performing function: @Sendable () async throws -> Void
  ) async throws {
    try await withTaskExecutorPreference(ThreadPerJobExecutor.shared) {
      try await function()
    }
  }
}

extension Trait where Self == OffThePool {
  /// Each test runs on threads of its own, so blocking it starves no other test.
  static var offThePool: Self { OffThePool() }
}

/// Starts a thread for every job: a job that blocks holds only its own thread.
final class ThreadPerJobExecutor: TaskExecutor {
  static let shared = ThreadPerJobExecutor()

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let executor = asUnownedTaskExecutor()
    let thread = Thread { job.runSynchronously(on: executor) }
    thread.start()
  }
}
