import Dispatch
import Foundation
import LegacyKit
import Synchronization
import Testing

@testable import WorkbookTesting

/// The probes that tell suspending from blocking and find a resume made under the lock that
/// `onCancel` takes. Each is tried on a correct bridge (no finding) and on the mistake it is
/// there to catch (the finding it records, with the words the learner will read). Findings
/// are captured here rather than recorded, so a passing run prints no failure.
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

    let findings = await capturingFindings {
      await #expect(throws: DeadlineExceeded.self) {
        try await withDeadline(.seconds(1), "greeting", on: executor) {
          let done = DispatchSemaphore(value: 0)
          let received = Locked<String?>(nil)
          greeter.greet("Ada") { greeting in
            received.withLock { $0 = greeting }
            done.signal()
          }
          done.wait()
          return received.value
        }
      }
    }

    #expect(findings.count == 1)
    #expect(findings.first?.hasPrefix("greeting blocked its thread instead of suspending") == true)
    #expect(
      findings.first?.contains(neverResumedMarker) == false, "blocking is a failure, not a hang")
  }

  @Test("A polling loop runs many jobs while a late callback is held back")
  func pollingBridge() async throws {
    let executor = OneThreadExecutor()
    // The greeting comes once the loop has looked a few times, however slowly a busy
    // machine lets it look.
    let afterSomePolls = CallbackScheduler(name: "once the loop has polled a few times") { work in
      Thread {
        _ = waitOnThisThread(upTo: .seconds(2)) { executor.jobsRun > 5 }
        work()
      }.start()
    }
    let greeter = Greeter(script: CallbackScript(timing: .scheduled(afterSomePolls)))

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
    let findings = await capturingFindings {
      _ = try? await withCancellationRacingResume(.seconds(2), "wait()") {
        try await CancellableWait().wait(resumingUnderLock: true)
      }
    }

    #expect(findings.count == 1)
    #expect(
      findings.first?.hasPrefix(
        "wait() resumed its continuation while holding the lock that its onCancel handler takes"
      ) == true)
  }

  @Test("A cancel stuck behind the lock is reported instead of hanging the test")
  func cancelStuckBehindTheLock() async throws {
    // onCancel waits for the gate, as it would for a lock held during a resume.
    let gate = DispatchSemaphore(value: 0)
    let started = Locked(false)
    let task = Task {
      await withTaskCancellationHandler {
        started.withLock { $0 = true }
        try? await Task.sleep(for: .seconds(5))
      } onCancel: {
        gate.wait()
      }
    }
    await eventually("the task to be inside its cancellation handler") { started.value }

    let findings = await capturingFindings {
      cancelOrReportLockedResume(task, "sleep()", patience: .milliseconds(200))
    }
    gate.signal()

    #expect(findings.count == 1)
    #expect(findings.first?.hasPrefix("sleep() resumed its continuation while holding") == true)
  }
}

/// What the helpers found while `body` ran, instead of issues for this test (used by the
/// other suites of these tests too).
func capturingFindings(
  _ body: () async throws -> Void
) async rethrows -> [String] {
  let captured = Locked<[String]>([])
  try await Findings.$captured.withValue(captured) { try await body() }
  return captured.value
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
