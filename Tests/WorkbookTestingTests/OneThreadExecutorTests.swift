import Dispatch
import Foundation
import LegacyKit
import Synchronization
import Testing
import WorkbookTesting

/// The probes that tell suspending from blocking and find a resume made under the lock that
/// `onCancel` takes. Each is tried on a correct bridge (no issue) and on the mistake it is
/// there to catch (the issue it records, with the words the learner will read).
@Suite("OneThreadExecutor and the probes built on it")
struct OneThreadExecutorTests {
  @Test("A bridge that suspends runs in two jobs, and its callback runs on the same thread")
  func suspendingBridge() async throws {
    let executor = OneThreadExecutor()
    let greeter = Greeter(script: .onThreadOf(executor))

    let greeting = try await withDeadline(.seconds(2), "greeting", on: executor) {
      await withCheckedContinuation { continuation in
        greeter.greet("Ada") { continuation.resume(returning: $0) }
      }
    }

    #expect(greeting == "Hello, Ada!")
    #expect(executor.jobsRun == 2)
  }

  @Test("A bridge that waits on a semaphore is reported as blocking, not as never resumed")
  func blockingBridge() async throws {
    let executor = OneThreadExecutor()
    let greeter = Greeter(script: .onThreadOf(executor))

    try await withKnownIssue {
      _ = try await withDeadline(.seconds(1), "greeting", on: executor) {
        let done = DispatchSemaphore(value: 0)
        let received = Locked<String?>(nil)
        greeter.greet("Ada") { greeting in
          received.withLock { $0 = greeting }
          done.signal()
        }
        done.wait()
        return received.value
      }
    } matching: { issue in
      // The recorded issue, and the error that stops the test after it.
      says(issue, "blocked its thread instead of suspending")
    }
  }

  @Test("A polling loop runs many jobs while a late callback is held back")
  func pollingBridge() async throws {
    let executor = OneThreadExecutor()
    let greeter = Greeter(script: .later(.milliseconds(300)))

    _ = try await withDeadline(.seconds(2), "greeting", on: executor) {
      let received = Locked<String?>(nil)
      greeter.greet("Ada") { greeting in received.withLock { $0 = greeting } }
      while received.value == nil { try await Task.sleep(for: .milliseconds(10)) }
      return received.value
    }

    #expect(executor.jobsRun > 5)
  }

  @Test("Resuming outside the lock lets a racing cancellation through")
  func resumeOutsideTheLock() async throws {
    let value = try await withCancellationRacingResume(.seconds(2), "wait()") {
      try await CancellableWait().wait(resumingUnderLock: false)
    }
    #expect(value == 7)
  }

  @Test("Resuming under the lock that onCancel takes is reported, naming that lock")
  func resumeUnderTheLock() async throws {
    try await withKnownIssue {
      _ = try await withCancellationRacingResume(.seconds(2), "wait()") {
        try await CancellableWait().wait(resumingUnderLock: true)
      }
    } matching: { issue in
      says(issue, "while holding the lock that its onCancel handler takes")
    }
  }
}

/// True if the issue's comments, or the error it caught, contain `words`.
private func says(_ issue: Issue, _ words: String) -> Bool {
  if case .errorCaught(let error) = issue.kind, "\(error)".contains(words) { return true }
  return issue.comments.contains { $0.rawValue.contains(words) }
}

/// A cancellable wait resumed from a background queue, with its continuation behind a lock.
private final class CancellableWait: Sendable {
  private let pending = Mutex<CheckedContinuation<Int, any Error>?>(nil)

  func wait(resumingUnderLock: Bool) async throws -> Int {
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        pending.withLock { $0 = continuation }
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { [self] in
          if resumingUnderLock {
            pending.withLock { pending in
              pending?.resume(returning: 7)
              pending = nil
            }
          } else {
            pending.withLock { $0.take() }?.resume(returning: 7)
          }
        }
      }
    } onCancel: {
      pending.withLock { $0.take() }?.resume(throwing: CancellationError())
    }
  }
}
