import Synchronization
import Testing

@testable import WorkbookTesting

/// A one-waiter slot whose wait can be cancelled, written both ways: checking for
/// cancellation under the lock that stores the continuation, or before taking it.
private final class Slot: Sendable {
  private let waiting = Mutex<CheckedContinuation<Void, any Error>?>(nil)
  private let checksUnderTheLock: Bool

  init(checksUnderTheLock: Bool) {
    self.checksUnderTheLock = checksUnderTheLock
  }

  func wait() async throws {
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let cancelledEarly = checksUnderTheLock ? false : Task.isCancelled
        let cancelled = waiting.withLock { slot in
          if cancelledEarly || (checksUnderTheLock && Task.isCancelled) { return true }
          slot = continuation
          return false
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
      }
    } onCancel: {
      waiting.withLock { $0.take() }?.resume(throwing: CancellationError())
    }
  }

  /// Ends a wait the probe left hanging, so the test leaves nothing behind.
  func release() {
    waiting.withLock { $0.take() }?.resume()
  }
}

@Suite struct CancelAfterCheckTests {
  @Test func theProbeSeesEveryLookAtCancellation() async throws {
    let (task, probe) = CancelAfterCheck.task(cancelledAfterLook: 3) {
      _ = Task.isCancelled
      try Task.checkCancellation()
      return Task.isCancelled
    }
    // If this fails, the toolchain calls something else for these two: the probe is blind.
    #expect(try await task.value == false)
    #expect(probe.looks == 3)
    #expect(probe.fired)
    #expect(task.isCancelled)
  }

  @Test func outsideAProbedTaskLooksAnswerAsUsual() async throws {
    let task = Task { () -> Bool in
      withUnsafeCurrentTask { $0?.cancel() }
      return Task.isCancelled
    }
    #expect(await task.value)
    await #expect(throws: CancellationError.self) {
      try await Task {
        withUnsafeCurrentTask { $0?.cancel() }
        try Task.checkCancellation()
      }.value
    }
  }

  @Test func aCheckUnderTheStoringLockKeepsTheCancel() async throws {
    let slot = Slot(checksUnderTheLock: true)
    let (task, probe) = CancelAfterCheck.task(cancelledAfterLook: 1) { try await slot.wait() }
    let outcome = try await withDeadline(.seconds(2), "a wait cancelled right after its check") {
      await task.result
    }
    #expect(probe.fired)
    #expect(throws: CancellationError.self) { try outcome.get() }
  }

  @Test func aCheckBeforeTheStoringLockLosesTheCancel() async throws {
    let slot = Slot(checksUnderTheLock: false)
    let ended = Locked(false)
    let (task, probe) = CancelAfterCheck.task(cancelledAfterLook: 1) {
      defer { ended.withLock { $0 = true } }
      try await slot.wait()
    }
    // The cancel came between the check and the store, so the wait is stuck: every time.
    #expect(await !eventually(within: .milliseconds(500)) { ended.value })
    #expect(probe.fired)
    #expect(task.isCancelled)
    // Released by hand, the stored continuation was the only one: the wait returns.
    slot.release()
    let outcome = try await withDeadline(.seconds(2), "the released wait") { await task.result }
    #expect(throws: Never.self) { try outcome.get() }
  }
}
