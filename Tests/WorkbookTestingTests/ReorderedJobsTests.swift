import Foundation
import Testing

@testable import WorkbookTesting

// One at a time: a scope that ends sends on every job held, its own and the others'.
@Suite("withPlainThreadJobsReordered", .serialized)
struct ReorderedJobsTests {
  /// Starts `count` tasks from a thread that runs no task, as a callback would, each
  /// appending its number; returns once all have run.
  private static func tasksFromAPlainThread(_ count: Int) async -> [Int] {
    let order = Locked<[Int]>([])
    let thread = Thread {
      for number in 1...count {
        Task { order.withLock { $0.append(number) } }
      }
    }
    thread.start()
    await eventually("the \(count) tasks to run") { order.value.count == count }
    return order.value
  }

  // The held jobs are sent on backwards to a pool that runs several at once, and a thread
  // that takes a job can start it after a neighbour's: a burst comes out backwards give or
  // take such a swap (5, 3, 2, 1, 4 is common on two cores; 4, 3, 2, 1, 5 under the Thread
  // Sanitizer), never in the order made. So no burst may keep its order, and over five
  // bursts most pairs must come out backwards (without the helper, none does).
  @Test("Tasks started together on a plain thread run in the reverse order")
  func burstRunsBackwards() async {
    var bursts: [[Int]] = []
    for _ in 1...5 {
      let order = await withPlainThreadJobsReordered(window: .milliseconds(50)) {
        await Self.tasksFromAPlainThread(5)
      }
      bursts.append(order)
      #expect(order != [1, 2, 3, 4, 5], "a burst ran in the order it was made")
    }
    // Of each burst's 10 pairs, those that ran in the reverse order of their making.
    let backwards = bursts.map { order in
      order.indices.reduce(0) { sum, i in
        sum + order[(i + 1)...].filter { order[i] > $0 }.count
      }
    }
    #expect(
      backwards.reduce(0, +) > 25,
      "only \(backwards.reduce(0, +)) of 50 pairs ran backwards: \(bursts)")
  }

  @Test("Tasks started from a task are not held")
  func tasksFromTasksGoAsUsual() async {
    let started = Locked(false)
    let clock = ContinuousClock()
    let start = clock.now
    await withPlainThreadJobsReordered(window: .seconds(2)) {
      Task { started.withLock { $0 = true } }
      await eventually("the task to run") { started.value }
    }
    #expect(started.value)
    #expect(clock.now - start < .seconds(1), "a task started from a task waited the window")
  }

  @Test("Leaving sends on what is still held, in the reverse order")
  func leavingReleasesTheRest() async {
    let order = Locked<[Int]>([])
    let ranInside = Locked(0)
    let heldInside = Locked(0)
    await withPlainThreadJobsReordered(window: .seconds(2)) {
      let thread = Thread {
        for number in 1...5 { Task { order.withLock { $0.append(number) } } }
      }
      thread.start()
      // Held for the whole window: none has run yet when the scope ends.
      try? await Task.sleep(for: .milliseconds(100))
      ranInside.withLock { $0 = order.value.count }
      heldInside.withLock { $0 = plainThreadJobsHeld() }
    }
    #expect(ranInside.value == 0, "held tasks ran before the window was over")
    #expect(heldInside.value >= 5, "plainThreadJobsHeld() counted \(heldInside.value) of 5")
    await eventually("the held tasks to run") { order.value.count == 5 }
    // Sent on backwards; the pool's threads may let a neighbour overtake (see above).
    #expect(order.value != [1, 2, 3, 4, 5], "the held tasks ran in the order they were made")
  }

  @Test("Tasks started on the support's own watchdog threads are not held")
  func watchdogJobsGoAsUsual() async {
    let ran = Locked(false)
    let ranInside = Locked(false)
    await withPlainThreadJobsReordered(window: .seconds(2)) {
      let thread = Thread {
        ReorderedJobs.markThisThreadAsWatchdog()
        Task { ran.withLock { $0 = true } }
      }
      thread.start()
      let inTime = await eventually(within: .seconds(1)) { ran.value }
      ranInside.withLock { $0 = inTime }
    }
    #expect(ranInside.value, "a task started on a watchdog's thread was held back")
  }
}
