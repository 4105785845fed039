import Dispatch
import LegacyKit
import Testing
import WorkbookTesting

/// Runs `operation` within a 2-second deadline and checks that it throws `expected`.
///
/// Unlike `#expect(throws:)`, each way to get it wrong gets its own message in the learner's
/// words: `returned` when the operation returned a value instead of throwing, `wrongError`
/// when it threw something else. A deadline that passes is already recorded by
/// `withDeadline` (with `hint`), so nothing more is said then.
func expectThrows<T: Sendable, E: Error & Equatable>(
  _ expected: E,
  from operationName: String,
  hint: String,
  returned: @Sendable (T) -> String,
  wrongError: @Sendable (any Error) -> String,
  sourceLocation: SourceLocation = #_sourceLocation,
  _ operation: @escaping @Sendable () async throws -> T
) async {
  do {
    let value = try await withDeadline(
      .seconds(2), operationName, hint: hint, sourceLocation: sourceLocation, operation)
    Issue.record(Comment(rawValue: returned(value)), sourceLocation: sourceLocation)
  } catch is DeadlineExceeded {
    // withDeadline has recorded why.
  } catch {
    #expect(
      error as? E == expected, Comment(rawValue: wrongError(error)),
      sourceLocation: sourceLocation)
  }
}

/// A script that calls back once, `delay` after the call, on `executor`'s one thread, queued
/// behind whatever runs there, as a framework calling back on the main queue does.
///
/// The delay gives a function that polls (a `Task.sleep` loop checking a value) time to run
/// many times on that thread; a function that blocks the thread never lets the callback run.
func lateOnThreadOf(
  _ executor: OneThreadExecutor, after delay: Duration = .milliseconds(500)
) -> CallbackScript {
  let scheduler = CallbackScheduler(name: "the caller's one thread, after \(delay)") { work in
    DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) {
      executor.schedule(work)
    }
  }
  return CallbackScript(timing: .scheduled(scheduler))
}

/// Runs `operation` on `executor`, whose legacy callbacks come late on that same thread
/// (``lateOnThreadOf(_:after:)``), and checks that it suspended while it waited.
///
/// A function that blocks its thread (a semaphore, a dispatch group) never lets the
/// callback run: `withDeadline(on:)` reports that it blocked instead of suspending. A
/// function that polls runs many steps on the thread while it waits; one that suspends runs
/// about two per wait (before it suspends, and after it is resumed).
///
/// `isRight` tells a right value from a wrong one: a function that returned a wrong value
/// early (a timer of its own that gave up on the callback) ran a few extra steps for that
/// timer, not a polling loop, so only the caller's check of the value speaks then.
@discardableResult
func expectSuspends<T: Sendable>(
  _ operationName: String,
  hint: String,
  waits: Int = 1,
  on executor: OneThreadExecutor,
  isRight: (T) -> Bool = { _ in true },
  sourceLocation: SourceLocation = #_sourceLocation,
  _ operation: sending @escaping () async throws -> T
) async throws -> T {
  // The steps run between 0.1 s and 0.45 s, while nothing is due: a polling loop keeps
  // running then; a timer or a second task of its own beside the wait does not. Only the
  // message depends on this count, never the verdict.
  let quiet = Locked((start: -1, end: -1))
  DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) {
    quiet.withLock { $0.start = executor.jobsRun }
  }
  DispatchQueue.global().asyncAfter(deadline: .now() + 0.45) {
    quiet.withLock { $0.end = executor.jobsRun }
  }
  let value = try await withDeadline(
    .seconds(2), operationName, hint: hint, on: executor, sourceLocation: sourceLocation,
    operation)
  guard isRight(value) else { return value }
  let steps = executor.jobsRun
  let window = quiet.value
  let polled = window.start < 0 || window.end < 0 || window.end - window.start >= 2
  #expect(
    steps <= 2 * waits + 2,
    Comment(
      rawValue: polled
        ? """
        \(operationName) polled instead of suspending: it ran \(steps) separate steps on \
        its thread while it waited for a callback that came after half a second, and kept \
        running while nothing was due (a Task.sleep loop checking a value?). Suspend on a \
        continuation, and let the callback resume it.
        """
        : """
        \(operationName) ran \(steps) separate steps on its thread for a callback that \
        came after half a second, where one suspension and one resume take about \
        \(2 * waits + 2): it did work of its own beside the wait (a timer, or a task racing \
        the callback?). Nothing but the callback decides the answer: a timer that wins \
        makes one up, however slow the legacy API is allowed to be.
        """),
    sourceLocation: sourceLocation)
  return value
}

/// Runs `operation` while the main thread is busy with other work, as a busy app's main
/// thread is, for at most `limit`; returns its value, and whether it returned while the
/// main thread was still busy.
///
/// Nothing in a bridge from a callback to `async` needs the main thread: one that returns
/// only once the main thread is free hops there on its way back (through the main queue or
/// the main actor), so its caller waits for the app's main thread for nothing, and forever
/// when the main thread is the one waiting for the answer.
func whileTheMainThreadIsBusy<T: Sendable>(
  for limit: Duration = .milliseconds(1_500),
  _ operation: @Sendable () async throws -> T
) async rethrows -> (value: T, returnedWhileBusy: Bool) {
  let release = DispatchSemaphore(value: 0)
  let mainIsFree = Locked(false)
  // Returns once the main thread is held; the hold ends at `release`, or after `limit`.
  await withCheckedContinuation { (held: CheckedContinuation<Void, Never>) in
    DispatchQueue.main.async {
      held.resume()
      _ = release.wait(timeout: .now() + limit.timeInterval)
      mainIsFree.withLock { $0 = true }
    }
  }
  defer { release.signal() }
  let value = try await operation()
  return (value, !mainIsFree.value)
}

/// What went wrong when `operationName` returned only once the main thread was free.
func waitedForTheMainThread(_ operationName: String) -> Comment {
  """
  \(operationName) returned only once the app's main thread was free: the answer came on a \
  background thread, but it went by way of the main thread (the main queue or the main \
  actor) before reaching the caller, although nothing in it needs the main thread. The \
  caller waits for a busy main thread for nothing, and forever when the main thread is the \
  one waiting for the answer.
  """
}

/// How a call ended whose task was cancelled while it waited for its legacy answer.
///
/// Runs `operation` in a task and cancels the task once the legacy request is out
/// (`asked()`), with the answer still to come: the fakes here cannot be cancelled, so the
/// answer comes anyway. Once the call has ended, waits until the answer has been delivered
/// (`answered()`) and a little longer, so that a bridge that resumes for the cancel and then
/// again for the answer stops the process in this test, where the runner names it.
func endingOfACallCancelledWhileWaiting<T: Sendable>(
  _ operationName: String, hint: String,
  asked: @escaping @Sendable () -> Bool, answered: @escaping @Sendable () -> Bool,
  sourceLocation: SourceLocation = #_sourceLocation,
  _ operation: @escaping @Sendable () async throws -> T
) async throws -> Result<T, any Error> {
  // On a thread of its own: a wrong answer may spin once its task is cancelled (a
  // `try? await Task.sleep` loop never sleeps in a cancelled task), and a spin on a thread
  // of the shared pool would starve the timers of every other test in the process.
  let call = Task(executorPreference: OneThreadExecutor()) { try await operation() }
  let out = await eventually { asked() }
  try #require(
    out, "\(operationName) never made its legacy request", sourceLocation: sourceLocation)
  call.cancel()
  let ending = try await withDeadline(
    .seconds(3), "\(operationName) in a task cancelled while it waited", hint: hint,
    sourceLocation: sourceLocation
  ) {
    await call.result
  }
  _ = await eventually { answered() }
  try await Task.sleep(for: .milliseconds(100))
  return ending
}

/// A script that calls back once, `delay` after the call, on a background queue, and counts
/// the answers it has delivered: for a test that must know when the answer has come.
func countedLater(
  _ delay: Duration = .milliseconds(300)
) -> (script: CallbackScript, delivered: Locked<Int>) {
  let delivered = Locked(0)
  let scheduler = CallbackScheduler(name: "a background queue, after \(delay)") { work in
    DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) {
      work()
      delivered.withLock { $0 += 1 }
    }
  }
  return (CallbackScript(timing: .scheduled(scheduler)), delivered)
}

extension Result where Failure == any Error {
  /// The value, if it is a success.
  var value: Success? { try? get() }

  /// What the call did, for a message: "\"VALUE\"", or "threw ERROR".
  var described: String {
    switch self {
    case .success(let value): "\"\(value)\""
    case .failure(let error): "threw \(error)"
    }
  }
}

/// How late ``expectHoldsNoThread(_:_:)``'s answers come: longer than the pool check's
/// patience, so that a thread held while waiting for one is seen.
let slowAnswer = CallbackScript.later(.milliseconds(2500))

/// Runs `operation`, whose legacy answer comes late (``slowAnswer``), and checks that no
/// thread of the concurrency pool is held while it waits: a semaphore or a group's wait, in
/// this task or in another one it started (`Task.detached` too), is seen and named.
@discardableResult
func expectHoldsNoThread<T: Sendable>(
  _ operationName: String, sourceLocation: SourceLocation = #_sourceLocation,
  _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
  try await withDeadline(
    .seconds(10), operationName,
    hint: "\(operationName) holds a thread of the concurrency pool while the legacy call "
      + "works; moving the wait into another task still holds a thread, so suspend on a "
      + "continuation instead",
    sourceLocation: sourceLocation, operation)
}

/// Checks how a call whose task was cancelled while it waited ended: with `answer` (what
/// the caller calls it: "label", "value"), or with `CancellationError`, and nothing else.
/// `what` says what the legacy side was doing when the task was cancelled.
func expectAnswerOrCancellation<T: Equatable & Sendable>(
  _ ending: Result<T, any Error>, _ answer: T, called answerName: String,
  from operationName: String, while what: String,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  switch ending {
  case .failure(let error):
    #expect(
      error is CancellationError,
      Comment(
        rawValue: "the task was cancelled while \(what), and \(operationName) "
          + "\(ending.described): a cancelled call may end with the \(answerName) or with "
          + "CancellationError, once"),
      sourceLocation: sourceLocation)
  case .success(let value):
    #expect(
      value == answer,
      "\(operationName) returned \(ending.described), not the \(answerName)",
      sourceLocation: sourceLocation)
  }
}
