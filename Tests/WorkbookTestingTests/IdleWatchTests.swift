import Foundation
import Testing
import WorkbookTesting

@Suite("IdleWatch and SettlingExecutor")
struct IdleWatchTests {
  @Test(
    "A polling loop keeps every window busy",
    .enabled(if: IdleWatch.switches() != nil, "IdleWatch counts switches on Linux only"))
  func pollingIsSeen() async throws {
    // A loop that looks every millisecond. Each look is at least one wake-up, whatever else
    // the process does (other tests only add more); a busy machine makes the looks fewer,
    // not cheaper.
    let looks = Locked(0)
    let poll = Task {
      while !Task.isCancelled {
        looks.withLock { $0 += 1 }
        try? await Task.sleep(for: .milliseconds(1))
      }
    }
    defer { poll.cancel() }
    await eventually("the poll loop to start") { looks.value > 0 }
    let looksBefore = looks.value
    let woke = await IdleWatch.wakeups(during: .milliseconds(200))
    let looked = looks.value - looksBefore
    #expect(looked > 0, "the poll loop never looked")
    #expect(
      (woke ?? 0) >= looked,
      "\(looked) looks of a poll loop were only \(woke.map(String.init) ?? "nil") wake-ups")
  }

  @Test("A settling executor is idle once its task has suspended, and counts its jobs")
  func settlingExecutorSettles() async throws {
    let executor = SettlingExecutor()
    let gate = Locked<CheckedContinuation<Void, Never>?>(nil)
    let task = Task(executorPreference: executor) {
      await withCheckedContinuation { continuation in gate.withLock { $0 = continuation } }
    }
    let settled = await eventually { executor.isIdle && executor.jobsRun >= 1 && gate.value != nil }
    #expect(settled, "the task's first job should have run and ended at its suspension")
    let jobsBefore = executor.jobsRun
    gate.value?.resume()
    await task.value
    // The job is counted once it has returned to the executor, a moment after the task ends.
    let counted = await eventually { executor.jobsRun > jobsBefore }
    #expect(counted, "resuming the task runs one more job on the executor")
  }
}
