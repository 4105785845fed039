import Foundation
import LegacyKit
import Synchronization

/// Runs `operation`, synchronous code that starts tasks, so that every task it starts with
/// `Task { }` runs before the statement after `Task { }` does: until it ends, suspends, or
/// has waited `patience` (for a lock the caller still holds, say).
///
/// A new task may start on another thread the moment `Task { }` returns, and on a busy
/// machine it may even finish first. Code that creates a task and only then records it,
/// cancels it or decides about it has a gap there, which a test can almost never hit by
/// chance: the caller's next statement comes a few nanoseconds later. This makes the
/// new task win that race every time, whatever the code does next, so a check-then-act
/// around `Task { }` fails on every run. Correct code, which makes the task's decisions
/// before it runs or under a lock the task also takes, passes (a task that waits for the
/// caller's lock is let go after `patience`).
///
/// Only tasks created on the calling thread, without an actor, while `operation` runs are
/// affected; others go to the pool as usual. The calling thread is blocked while it waits
/// (at most `patience` per task), well within the pool check's patience.
public func withNewTasksRunningFirst<T>(
  patience: Duration = .milliseconds(200), _ operation: () throws -> T
) rethrows -> T {
  GlobalEnqueueHook.installOnce()
  let thread = pthread_self()
  runFirstThreads.withLock { $0.append(RunFirst(thread: thread, patience: patience)) }
  defer {
    runFirstThreads.withLock { runFirst in
      runFirst.removeAll { pthread_equal($0.thread, thread) != 0 }
    }
  }
  return try operation()
}

/// The thread whose new tasks run first, and how long its caller waits for each.
struct RunFirst: @unchecked Sendable {  // pthread_t is a plain integer on Linux
  let thread: pthread_t
  let patience: Duration
}

/// The threads inside `withNewTasksRunningFirst`, one entry each.
let runFirstThreads = Mutex<[RunFirst]>([])

/// Runs `job` first if it was sent from a thread inside `withNewTasksRunningFirst`, and says
/// whether it did; the shared hook (`GlobalEnqueueHook`) asks this before anything else.
func runFirstIfAsked(_ job: UnownedJob) -> Bool {
  let thread = pthread_self()
  guard
    let runFirst = runFirstThreads.withLock({ $0.first { pthread_equal($0.thread, thread) != 0 } })
  else { return false }
  // Run the new task on a thread of its own, and hold the caller until it ends or
  // suspends: then the caller's next statement comes after everything the task did.
  let ran = DispatchSemaphore(value: 0)
  let runner = Thread {
    runOnGenericExecutor(job, genericExecutor)
    ran.signal()
  }
  runner.name = "new task run first"
  runner.start()
  _ = ran.wait(timeout: .now() + runFirst.patience.timeInterval)
  return true
}

/// Runs a job as a thread of the pool would: on the generic executor, the one that a task
/// without an actor runs on.
@_silgen_name("swift_job_run")
func runOnGenericExecutor(_ job: UnownedJob, _ executor: UnownedSerialExecutor)

/// The runtime's name for the generic executor: no identity, no implementation.
let genericExecutor = unsafeBitCast((0, 0), to: UnownedSerialExecutor.self)
