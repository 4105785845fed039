import Testing
import WorkbookTesting

@testable import Structured

/// What the work launched into a scope saw: when it ran, and how it ended.
private final class Probe: Sendable {
  let started = Locked(0)
  let endedCancelled = Locked(0)
  let endedNormally = Locked(0)

  /// Work that waits (a minute, or until its task is cancelled), then records how it ended.
  var waitForever: @Sendable () async -> Void {
    { [self] in
      started.withLock { $0 += 1 }
      try? await Task.sleep(for: .seconds(60))
      if Task.isCancelled {
        endedCancelled.withLock { $0 += 1 }
      } else {
        endedNormally.withLock { $0 += 1 }
      }
    }
  }
}

@Suite("7.3 Scopes")
struct ScopesTests {
  @Test("Runs the work it launches")
  func runsTheWork() async throws {
    let scope = TaskScope()
    let ran = Locked(0)

    for _ in 0..<3 { scope.launch { ran.withLock { $0 += 1 } } }

    await eventually("3 launched tasks to run") { ran.value == 3 }
  }

  @Test("cancel() cancels every task it owns, and every one of them ends")
  func cancelEndsTheWork() async throws {
    let scope = TaskScope()
    let probe = Probe()
    for _ in 0..<5 { scope.launch(probe.waitForever) }
    await eventually("5 tasks to start") { probe.started.value == 5 }
    #expect(scope.runningCount == 5, "the scope should hold the 5 tasks it is running")

    scope.cancel()

    #expect(scope.isCancelled)
    await eventually("every task to end, cancelled, after cancel()") {
      probe.endedCancelled.value == 5
    }
    await eventually("the scope to let go of its tasks once cancelled") {
      scope.runningCount == 0
    }
  }

  @Test("Letting the scope go cancels its work: nothing outlives its owner")
  func deinitEndsTheWork() async throws {
    let probe = Probe()
    weak var released: TaskScope?
    do {
      let scope = TaskScope()
      released = scope
      for _ in 0..<3 { scope.launch(probe.waitForever) }
      await eventually("3 tasks to start") { probe.started.value == 3 }
    }

    #expect(
      released == nil,
      """
      the scope is still alive after its owner let it go: a task it launched holds it \
      strongly (capture [weak self] in the task)
      """)
    await eventually("every task to end, cancelled, once the scope is gone") {
      probe.endedCancelled.value == 3
    }
  }

  @Test("Work launched into a cancelled scope starts cancelled")
  func launchAfterCancel() async throws {
    let scope = TaskScope()
    scope.cancel()
    let sawCancellation = Locked<Bool?>(nil)

    scope.launch { sawCancellation.withLock { $0 = Task.isCancelled } }

    await eventually("the launched work to run") { sawCancellation.value != nil }
    #expect(sawCancellation.value == true, "work launched after cancel() was not cancelled")
  }

  @Test("Forgets each task once it finishes")
  func forgetsFinishedTasks() async throws {
    let scope = TaskScope()
    let (gate, open) = AsyncStream.makeStream(of: Never.self)
    let started = Locked(0)
    for _ in 0..<4 {
      scope.launch {
        started.withLock { $0 += 1 }
        for await _ in gate {}
      }
    }
    await eventually("4 tasks to start") { started.value == 4 }
    #expect(scope.runningCount == 4, "the scope should hold the 4 tasks it is running")

    open.finish()

    await eventually("the scope to forget its 4 finished tasks") { scope.runningCount == 0 }
    #expect(scope.isCancelled == false)
  }

  @Test("Cancelling one scope leaves another scope's work running")
  func scopesAreIndependent() async throws {
    let cancelled = TaskScope()
    let kept = TaskScope()
    let probe = Probe()
    let keptProbe = Probe()
    cancelled.launch(probe.waitForever)
    kept.launch(keptProbe.waitForever)
    await eventually("both tasks to start") {
      probe.started.value == 1 && keptProbe.started.value == 1
    }

    cancelled.cancel()
    await eventually("the cancelled scope's task to end") { probe.endedCancelled.value == 1 }

    #expect(keptProbe.endedCancelled.value == 0, "the other scope's work was cancelled too")
    #expect(kept.runningCount == 1)
    kept.cancel()
    await eventually("the other scope's task to end") { keptProbe.endedCancelled.value == 1 }
  }
}
