import Foundation
import Testing
import WorkbookTesting

@Suite("IdleWatch and SettlingExecutor")
struct IdleWatchTests {
  @Test(
    "A polling loop keeps every window busy",
    .enabled(if: IdleWatch.switches() != nil, "IdleWatch reads /proc (Linux)"))
  func pollingIsSeen() async throws {
    // A loop that looks every millisecond: far more switches in every half second than
    // the 40 a test allows, whatever else the process does (other tests only add more).
    let poll = Task {
      while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(1)) }
    }
    defer { poll.cancel() }
    let fewest = await IdleWatch.fewestWakeups(
      in: .milliseconds(200), within: .milliseconds(600), atMost: 40)
    #expect((fewest ?? 0) > 40, "a 1 ms poll loop went unseen: \(fewest.map(String.init) ?? "nil")")
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
