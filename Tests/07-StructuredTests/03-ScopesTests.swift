import Foundation
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

/// The contract of `TaskScope`: each path, what the work and the scope's owner see, and the
/// test that checks it (— where a column does not apply, and why).
///
/// | path | the work (runs, cancelled, ends) | `runningCount` | thread, timing |
/// | --- | --- | --- | --- |
/// | work launched | runs: `runsTheWork` | 0 once it finished: `forgetsFinishedTasks`; work that ends at once too: `instantTasksAreForgotten` | — |
/// | `cancel()` | every task cancelled and ended: `cancelEndsTheWork`; work not started yet too: `cancelRightAfterLaunch`; after later tasks ended first: `tasksEndingOutOfOrder` | — | a cancellation handler may ask the scope, and `cancel()` returns: `handlerMayAskTheScope` |
/// | the scope is let go | its work cancelled: `deinitEndsTheWork` | — | — |
/// | launch into a cancelled scope | starts cancelled: `launchAfterCancel`; landing while `cancel()` cancels the tasks (from a cancellation handler, every time): `launchDuringCancel` | — | racing `cancel()` on other threads, every task ends cancelled: `launchRacingCancel` |
/// | a task launched after another ended | `cancel()` reaches it and every other: `idsAreNeverReused` | — | — |
/// | two scopes | cancelling one leaves the other's work: `scopesAreIndependent` | — | — |
/// | the tasks cancelled by work that runs after `cancel()` returned | — not part of the contract: "cancels every task the scope owns" promises no moment, and a catalogued alternative (a root task's task group, its stream finished by `cancel()`) cancels them that way | | |
/// | a new task that runs before `launch` goes on past `Task { }` (into a cancelled scope; one that ends at once) | starts cancelled: `launchAfterCancelRunningFirst` | 0 once it ended: `taskEndingBeforeLaunchReturnsIsForgotten` | the task runs first every time (`withNewTasksRunningFirst`) |
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

    #expect(
      scope.isCancelled,
      """
      cancel() must mark the scope cancelled: isCancelled is true from then on, and work \
      launched later starts cancelled
      """)
    await eventually("every task to end, cancelled, after cancel()") {
      probe.endedCancelled.value == 5
    }
    await eventually("the scope to let go of its tasks once cancelled") {
      scope.runningCount == 0
    }
  }

  @Test("Tasks that end in another order than they were launched: cancel() still finds the rest")
  func tasksEndingOutOfOrder() async throws {
    let scope = TaskScope()
    let probe = Probe()
    // The first task waits; the next two end at once, so they finish before it.
    scope.launch(probe.waitForever)
    await eventually("the first task to start") { probe.started.value == 1 }
    let quickOnesEnded = Locked(0)
    for _ in 0..<2 { scope.launch { quickOnesEnded.withLock { $0 += 1 } } }
    await eventually("the two quick tasks to end") { quickOnesEnded.value == 2 }
    let forgotten = await eventually { scope.runningCount == 1 }
    try #require(
      forgotten,
      """
      two tasks have finished, yet runningCount is \(scope.runningCount), not 1: the scope \
      must forget each task when it ends (have the task remove itself from the scope)
      """)

    scope.cancel()

    let ended = await eventually { probe.endedCancelled.value == 1 }
    #expect(
      ended,
      """
      cancel() did not reach the first task, still running after two later ones had ended: \
      when a task ends, the scope must forget that very task (by an id of its own, say), not \
      whichever one comes first in its list, or cancel() misses one that still runs
      """)
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
    let ended = await eventually { probe.endedCancelled.value == 3 }
    #expect(
      ended,
      """
      letting the scope go did not cancel its work (\(probe.endedCancelled.value) of 3 tasks \
      ended): cancel every task in deinit
      """)
  }

  @Test("Work launched into a cancelled scope starts cancelled")
  func launchAfterCancel() async throws {
    let scope = TaskScope()
    scope.cancel()
    let sawCancellation = Locked<Bool?>(nil)

    scope.launch { sawCancellation.withLock { $0 = Task.isCancelled } }

    await eventually("the launched work to run") { sawCancellation.value != nil }
    #expect(
      sawCancellation.value == true,
      """
      work launched after cancel() was not cancelled: cancel() must mark the scope cancelled, \
      and launch(_:) must start work cancelled in a cancelled scope
      """)
  }

  @Test("Work launched into a cancelled scope is cancelled before it runs, even at once")
  func launchAfterCancelRunningFirst() async throws {
    let scope = TaskScope()
    scope.cancel()
    // First as usual: when even that work runs uncancelled, the task running first is not
    // the cause, and the verdict must not say it is.
    let sawCancellationAsUsual = Locked<Bool?>(nil)
    scope.launch { sawCancellationAsUsual.withLock { $0 = Task.isCancelled } }
    await eventually("the launched work to run") { sawCancellationAsUsual.value != nil }
    try #require(
      sawCancellationAsUsual.value == true,
      """
      work launched after cancel() was not cancelled: cancel() must mark the scope cancelled, \
      and launch(_:) must start work cancelled in a cancelled scope
      """)
    let sawCancellation = Locked<Bool?>(nil)

    // The new task runs before launch(_:) goes on past `Task { }`, as it may on any run.
    withNewTasksRunningFirst {
      scope.launch { sawCancellation.withLock { $0 = Task.isCancelled } }
    }

    await eventually("the launched work to run") { sawCancellation.value != nil }
    #expect(
      sawCancellation.value == true,
      """
      in a cancelled scope, launch(_:) started work that ran uncancelled: its task ran as \
      soon as it was created, before launch(_:) cancelled it. A new task can start on \
      another thread the moment `Task { }` returns, so anything done to it afterwards \
      may come after the work has begun
      """)
  }

  @Test("A task that ends before launch(_:) returns is forgotten too")
  func taskEndingBeforeLaunchReturnsIsForgotten() async throws {
    let scope = TaskScope()
    // First as usual: a scope that never forgets a finished task fails here, with its own
    // cause, not the one below.
    let ranAsUsual = Locked(false)
    scope.launch { ranAsUsual.withLock { $0 = true } }
    await eventually("the launched work to run") { ranAsUsual.value }
    let forgottenAsUsual = await eventually { scope.runningCount == 0 }
    try #require(
      forgottenAsUsual,
      """
      the task has finished, yet runningCount is \(scope.runningCount): the scope must \
      forget each task when it ends (have the task remove itself from the scope)
      """)
    let ran = Locked(false)

    // The new task runs, and ends, before launch(_:) goes on past `Task { }`.
    withNewTasksRunningFirst {
      scope.launch { ran.withLock { $0 = true } }
    }

    await eventually("the launched work to run") { ran.value }
    let forgotten = await eventually { scope.runningCount == 0 }
    #expect(
      forgotten,
      """
      a task that ended before launch(_:) returned is still counted (runningCount is \
      \(scope.runningCount)): it removed itself from the scope before launch(_:) had \
      stored it, and launch(_:) stored it afterwards. A new task can run, and end, the \
      moment `Task { }` returns
      """)
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

    let forgotten = await eventually { scope.runningCount == 0 }
    #expect(
      forgotten,
      """
      all 4 tasks have finished, yet runningCount is \(scope.runningCount): the scope must \
      forget each task when it ends (have the task remove itself from the scope)
      """)
    #expect(scope.isCancelled == false)
  }

  @Test("cancel() right after launch(_:) cancels work that has not started yet")
  func cancelRightAfterLaunch() async throws {
    for round in 1...20 {
      let scope = TaskScope()
      let probe = Probe()
      for _ in 0..<3 { scope.launch(probe.waitForever) }

      scope.cancel()

      let ended = await eventually { probe.endedCancelled.value == 3 }
      try #require(
        ended,
        """
        round \(round): cancel() right after launch(_:) left \(3 - probe.endedCancelled.value) \
        of 3 tasks running: a task belongs to the scope from the moment launch(_:) returns, \
        started or not
        """)
      #expect(probe.endedNormally.value == 0)
      let forgotten = await eventually { scope.runningCount == 0 }
      #expect(forgotten, "round \(round): a cancelled scope still counts running tasks")
    }
  }

  @Test("Tasks that finish at once are forgotten too: the running count reaches 0")
  func instantTasksAreForgotten() async throws {
    let scope = TaskScope()
    let ran = Locked(0)

    // From several tasks at once, so that some launched tasks end before launch returns.
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<4 {
        group.addTask {
          for _ in 0..<100 { scope.launch { ran.withLock { $0 += 1 } } }
        }
      }
    }

    await eventually("the 400 launched tasks to run") { ran.value == 400 }
    let forgotten = await eventually { scope.runningCount == 0 }
    #expect(
      forgotten,
      """
      every task has finished, yet runningCount is \(scope.runningCount): the scope must \
      forget each task when it ends (and a task that ends before launch(_:) has stored it is \
      never forgotten: create and store it in one locked step)
      """)
  }

  @Test("A launch that lands while cancel() is cancelling the tasks starts cancelled too")
  func launchDuringCancel() async throws {
    let scope = TaskScope()
    let probe = Probe()
    let waiting = Locked(false)
    scope.launch {
      await withTaskCancellationHandler {
        waiting.withLock { $0 = true }
        try? await Task.sleep(for: .seconds(60))
      } onCancel: {
        // Runs inside cancel(), as Task.cancel() runs handlers at once: a launch from
        // another thread at that moment lands here every time.
        scope.launch(probe.waitForever)
      }
    }
    try #require(await eventually { waiting.value }, "the launched work never started")

    scope.cancel()

    #expect(
      await eventually { probe.endedCancelled.value == 1 },
      """
      work launched while cancel() was cancelling the scope's tasks ran on, uncancelled \
      (started \(probe.started.value), ended cancelled \(probe.endedCancelled.value)): \
      cancel() marked the scope cancelled only after it had taken its tasks, so the launch \
      in between was stored as a live task and then dropped without a cancel (marking the \
      scope and taking its tasks must be one step), or launch(_:) did not look at the mark
      """)
  }

  @Test("A task launched after another ended gets an id of its own: cancel() reaches every task")
  func idsAreNeverReused() async throws {
    let scope = TaskScope()
    let probe = Probe()
    let release = Locked(false)
    let quickEnded = Locked(false)
    // The first task ends once released, after the second started: then two tasks have
    // been launched and one runs, and the third must not take the second's place.
    scope.launch {
      while !release.value { try? await Task.sleep(for: .milliseconds(5)) }
      quickEnded.withLock { $0 = true }
    }
    scope.launch(probe.waitForever)
    await eventually("the second task to start") { probe.started.value == 1 }
    release.withLock { $0 = true }
    await eventually("the first task to end") { quickEnded.value }
    _ = await eventually { scope.runningCount == 1 }
    scope.launch(probe.waitForever)
    await eventually("the third task to start") { probe.started.value == 2 }

    scope.cancel()

    #expect(
      await eventually { probe.endedCancelled.value == 2 },
      """
      cancel() reached \(probe.endedCancelled.value) of the 2 tasks still running: the third \
      task, launched after the first had ended, took the second one's place in the scope \
      (an id made from how many tasks run is given again once one ends), so cancel() \
      never saw the second; give each task an id that is never used again
      """)
  }

  @Test("launch(_:) racing cancel() on other threads: every task ends, cancelled")
  func launchRacingCancel() async throws {
    // Kept alive to the end: letting a scope go would cancel its tasks and hide the bug.
    var scopes: [TaskScope] = []
    let probe = Probe()
    let rounds = 200

    for _ in 1...rounds {
      let scope = TaskScope()
      scopes.append(scope)
      await withTaskGroup(of: Void.self) { group in
        for _ in 0..<3 {
          group.addTask {
            for _ in 0..<10 { scope.launch(probe.waitForever) }
          }
        }
        group.addTask { scope.cancel() }
      }
    }

    let ended = await eventually { probe.endedCancelled.value == rounds * 30 }
    #expect(
      ended,
      """
      launch(_:) and cancel() on other threads left \
      \(rounds * 30 - probe.endedCancelled.value) of \(rounds * 30) tasks running: cancel() \
      must mark the scope cancelled, and launch(_:) must check that flag and store the task \
      in the same locked step, so cancel() either finds the task or the task starts cancelled
      """)
    #expect(probe.endedNormally.value == 0)
    withExtendedLifetime(scopes) {}
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

extension ScopesTests {
  @Test("A cancellation handler of the work may ask the scope how many tasks run: cancel() returns")
  func handlerMayAskTheScope() async throws {
    let scope = TaskScope()
    let waiting = Locked(false)
    let counted = Locked<Int?>(nil)
    scope.launch {
      await withTaskCancellationHandler {
        waiting.withLock { $0 = true }
        try? await Task.sleep(for: .seconds(10))
      } onCancel: {
        // Work that logs what is left when it is cancelled, as a progress screen would.
        counted.withLock { $0 = scope.runningCount }
      }
    }
    try #require(await eventually { waiting.value }, "the launched work never started")

    // On a thread of its own: a cancel() stuck for good must not take the test with it.
    let returned = Locked(false)
    Thread {
      scope.cancel()
      returned.withLock { $0 = true }
    }.start()

    #expect(
      await eventually { returned.value && counted.value != nil },
      """
      cancel() did not return: Task.cancel() runs the task's cancellation handlers at once, \
      on the thread that calls it, and this handler asked the scope for runningCount, which \
      waits for the scope's lock, while cancel() was holding that very lock. Code the scope \
      calls out to (a task's cancellation) must not run while the scope is locked
      """)
  }
}
