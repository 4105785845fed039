import Foundation
import Testing

/// The words that open the issue recorded when a deadline passes.
///
/// The runner looks for them to grade an exercise "never resumed" rather than "failed",
/// so keep them in step with `Verdict` in the runner.
public let neverResumedMarker = "Never resumed:"

/// Thrown by ``withDeadline(_:_:hint:sourceLocation:_:)`` when the operation is still
/// suspended at the deadline; the test stops there instead of waiting forever.
public struct DeadlineExceeded: Error, CustomStringConvertible {
  public let description: String
}

/// Runs `operation` and returns its result, unless it is still running after `limit`.
///
/// `limit` counts time in which the tests could run, so a busy machine does not fail a
/// correct answer: see ``RunnableTime``. On an idle machine it is plain wall-clock time.
///
/// A continuation that is never resumed would otherwise hang the test run. At the deadline
/// this records an issue that names `operation` and the likely cause, cancels the
/// operation, and throws ``DeadlineExceeded`` without waiting for it: an operation stuck
/// on a continuation cannot finish, so waiting would hang just the same.
///
/// - Parameters:
///   - limit: How long the operation may take. Keep it short; two seconds is plenty for
///     every simulated framework in the workbook.
///   - operationName: What was awaited, as the learner would say it, e.g. `"pickImage()"`.
///   - hint: The usual cause, e.g. "the cancel path never calls resume".
///   - executor: Where the operation runs. On a ``OneThreadExecutor`` an operation that
///     holds its thread at the deadline is reported as blocking instead of suspending
///     (a failure, not "never resumed"), since that is why it did not finish.
///   - checksPool: While the operation runs, all threads of the concurrency pool but one
///     are held, and a blocked last thread fails the test at once, whatever blocked it and
///     in whatever task (see ``withPoolOfOne(_:patience:sourceLocation:_:)``). Turn it off
///     only where the test itself must block a thread of the pool.
public func withDeadline<T: Sendable>(
  _ limit: Duration = .seconds(2),
  _ operationName: String,
  hint: String = "a path through your code never resumes its continuation",
  on executor: OneThreadExecutor? = nil,
  checksPool: Bool = true,
  sourceLocation: SourceLocation = #_sourceLocation,
  _ operation: sending @escaping @isolated(any) () async throws -> T
) async throws -> T {
  try await withDeadline(
    limit, operationName, likelyCause: { hint }, on: executor, checksPool: checksPool,
    sourceLocation: sourceLocation, operation)
}

/// Runs `operation` like ``withDeadline(_:_:hint:on:checksPool:sourceLocation:_:)``, but
/// works out the likely cause only at the deadline (before the operation is cancelled), from
/// what the test's fakes have seen by then, so that it can name the cause this answer has.
public func withDeadline<T: Sendable>(
  _ limit: Duration = .seconds(2),
  _ operationName: String,
  likelyCause: @Sendable () -> String,
  on executor: OneThreadExecutor? = nil,
  checksPool: Bool = true,
  sourceLocation: SourceLocation = #_sourceLocation,
  _ operation: sending @escaping @isolated(any) () async throws -> T
) async throws -> T {
  // Whichever reports first wins: the operation, the timer, or the pool's watchdog; the
  // stream keeps only that report.
  PoolStallWatch.start()
  let (outcomes, report) = AsyncStream.makeStream(
    of: DeadlineOutcome<T>.self, bufferingPolicy: .bufferingOldest(1))
  var membership: Int?
  if checksPool {
    let test = currentTestName()
    membership = await SharedSqueeze.shared.join(patience: .milliseconds(1500)) {
      announceBlocked($0.message(operationName, patience: .milliseconds(1500)), test: test)
      report.yield(.blocked($0))
    }
  }
  defer { membership.map(SharedSqueeze.shared.leave) }
  // The operation's own deadlines, and its own withoutPoolCheck, must not wait for their
  // turn behind this check: they would wait for themselves.
  let isMember = PoolCheckScope.isMember || membership != nil
  let work = Task(executorPreference: executor) {
    do {
      let value = try await PoolCheckScope.$isMember.withValue(isMember) { try await operation() }
      report.yield(.finished(.success(value)))
    } catch {
      report.yield(.finished(.failure(error)))
    }
  }
  let timer = Task {
    await RunnableTime.sleep(limit)
    if !Task.isCancelled { report.yield(.deadline) }
  }
  defer {
    timer.cancel()
    report.finish()
  }

  var iterator = outcomes.makeAsyncIterator()
  guard let first = await iterator.next() else {
    // The test itself was cancelled while waiting.
    work.cancel()
    throw CancellationError()
  }
  switch first {
  case .finished(let outcome):
    if case .failure(let error) = outcome {
      explainThrown(error, operationName, likelyCause())
    }
    return try outcome.get()
  case .blocked(let what):
    work.cancel()
    let message = what.message(operationName, patience: .milliseconds(1500))
    Findings.record(message, at: sourceLocation)
    throw PoolThreadBlocked(description: message)
  case .deadline:
    break
  }

  let hint = likelyCause()
  work.cancel()
  let message: String
  if let held = executor?.currentJobAge, held >= limit / 2 {
    message = blockedMessage(operationName, held: held)
  } else {
    message =
      "\(neverResumedMarker) \(operationName) did not finish within \(describe(limit)). "
      + "Likely cause: \(hint)."
  }
  Findings.record(message, at: sourceLocation)
  throw DeadlineExceeded(description: message)
}

/// What ended a ``withDeadline(_:_:hint:on:checksPool:sourceLocation:_:)``.
enum DeadlineOutcome<T: Sendable>: Sendable {
  case finished(Result<T, any Error>)
  case deadline
  case blocked(Blocked)
}

/// What the learner did when their function held its one thread until the deadline.
func blockedMessage(_ operationName: String, held: Duration) -> String {
  "\(operationName) blocked its thread instead of suspending: it held the only thread it "
    + "had for \(describe(held, rounded: true)), while the callback it was waiting for was "
    + "queued behind it on that same thread (as a callback on the main queue would be), so "
    + "neither could go on. Likely cause: a semaphore, a dispatch group or another blocking "
    + "wait inside an async function; suspend with a continuation instead, so the thread is "
    + "free while you wait."
}

/// "2 seconds" or "1.5 seconds": how a learner would say it, not `Duration`'s "2.0 seconds".
/// `rounded`: to a tenth of a second, for measured durations.
func describe(_ limit: Duration, rounded: Bool = false) -> String {
  let (seconds, attoseconds) = limit.components
  if attoseconds == 0 { return seconds == 1 ? "1 second" : "\(seconds) seconds" }
  let value = Double(seconds) + Double(attoseconds) / 1e18
  if rounded { return "\((value * 10).rounded() / 10) seconds" }
  return "\(value) seconds"
}

/// The words that open the line ``withDeadline(_:_:hint:on:sourceLocation:_:)`` writes to
/// standard error when the operation throws and the runner asked for explanations:
/// `workbook-thrown: <test>\t<operation>\t<error>\t<hint>`, one line. Keep the format in step
/// with the runner's `Classifier`.
public let thrownMarker = "workbook-thrown:"

/// Tells the runner what the test was about when the operation threw, in case the test did
/// not expect the error (Swift Testing then says only "Caught error: …"). Only when the
/// runner set `WORKBOOK_EXPLAIN`: a test may well expect the error, and then it says nothing.
private func explainThrown(_ error: any Error, _ operationName: String, _ hint: String) {
  guard ProcessInfo.processInfo.environment["WORKBOOK_EXPLAIN"] != nil,
    !(error is CancellationError), !(error is DeadlineExceeded), let test = Test.current
  else { return }
  writeExplanation(
    thrownMarker, [test.displayName ?? test.name, operationName, String(describing: error), hint])
}

/// Writes one line the runner reads from stderr: the marker, then the fields separated by
/// tabs, each on one line and free of tabs so that the runner can split them back.
private func writeExplanation(_ marker: String, _ fields: [String]) {
  let cleaned = fields.map {
    $0.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\t", with: " ")
  }
  FileHandle.standardError.write(Data("\(marker) \(cleaned.joined(separator: "\t"))\n".utf8))
}

/// Opens the line written to stderr when a watchdog finds the pool blocked (only when the
/// runner sets `WORKBOOK_EXPLAIN`): `workbook-blocked: <test>\t<finding>`. Keep the format in
/// step with `BlockedAnnouncement` in the runner.
public let blockedMarker = "workbook-blocked:"

/// The name of the test running this task, as the runner's events show it.
func currentTestName() -> String? {
  Test.current.map { $0.displayName ?? $0.name }
}

/// Writes a blocked pool's finding to stderr at once, from the watchdog's own thread.
///
/// The issue is recorded by the waiting test's task, which needs a thread of the pool to
/// run. When blocking calls hold every one of them (a blocking read in each of two tests on
/// two cores), that task never runs again, the run hangs, and the runner stops it: this
/// line is then the only trace of the cause, and the runner names it instead of a generic
/// time-out.
func announceBlocked(_ finding: String, test: String?) {
  guard ProcessInfo.processInfo.environment["WORKBOOK_EXPLAIN"] != nil else { return }
  writeExplanation(blockedMarker, [test ?? "", finding])
}

/// Where the helpers' findings go: an issue for the test that is running, unless a test of
/// these helpers captures them to check their words (so that its run prints no failure).
enum Findings {
  @TaskLocal static var captured: Locked<[String]>?

  static func record(_ message: String, at sourceLocation: SourceLocation) {
    if let captured {
      captured.withLock { $0.append(message) }
    } else {
      Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
    }
  }
}
