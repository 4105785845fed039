import Synchronization
import Testing
import WorkbookTesting

@Suite("withNewTasksRunningFirst")
struct NewTasksRunFirstTests {
  @Test("A task created inside runs to its end before the next statement")
  func runsToItsEnd() async {
    let steps = Locked<[String]>([])

    withNewTasksRunningFirst {
      Self.startTask { steps.withLock { $0.append("task") } }
      steps.withLock { $0.append("after Task { }") }
    }

    #expect(steps.value == ["task", "after Task { }"])
  }

  @Test("Once it returns, new tasks are queued as usual: the caller goes on first")
  func otherwiseTheCallerGoesOn() async {
    withNewTasksRunningFirst(patience: .seconds(10)) {}
    let steps = Locked<[String]>([])
    let gate = Locked(false)
    let clock = ContinuousClock()
    let start = clock.now

    // The task waits for the caller's word: were it still run first, the caller would
    // wait the whole patience (10 s) for it.
    Self.startTask {
      while !gate.value { try? await Task.sleep(for: .milliseconds(1)) }
      steps.withLock { $0.append("task") }
    }
    steps.withLock { $0.append("after Task { }") }
    gate.withLock { $0 = true }

    #expect(clock.now - start < .seconds(5), "the caller was held after the function returned")
    await eventually("the task to run") { steps.value.count == 2 }
    #expect(steps.value == ["after Task { }", "task"])
  }

  @Test("A task that waits for the caller's lock is let go after the patience")
  func waitsForTheCallersLock() async {
    let lock = Mutex(0)
    let clock = ContinuousClock()
    let start = clock.now

    withNewTasksRunningFirst(patience: .milliseconds(100)) {
      lock.withLock { _ in
        Self.startTask { lock.withLock { $0 += 1 } }
      }
    }

    #expect(clock.now - start >= .milliseconds(100))
    let ran = await eventually { lock.withLock { $0 } == 1 }
    #expect(ran, "the task never got the lock after the caller let it go")
  }

  @Test("A task that suspends lets the caller go on, and ends later")
  func suspendingTask() async {
    let steps = Locked<[String]>([])

    withNewTasksRunningFirst {
      Self.startTask {
        steps.withLock { $0.append("task begins") }
        try? await Task.sleep(for: .milliseconds(50))
        steps.withLock { $0.append("task ends") }
      }
      steps.withLock { $0.append("after Task { }") }
    }

    await eventually("the task to end") { steps.value.count == 3 }
    #expect(steps.value == ["task begins", "after Task { }", "task ends"])
  }

  /// A task without an actor, as a nonisolated function starts it.
  private static func startTask(_ body: @escaping @Sendable () async -> Void) {
    Task { await body() }
  }
}
