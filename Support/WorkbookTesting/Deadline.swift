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
public func withDeadline<T: Sendable>(
  _ limit: Duration = .seconds(2),
  _ operationName: String,
  hint: String = "a path through your code never resumes its continuation",
  sourceLocation: SourceLocation = #_sourceLocation,
  _ operation: sending @escaping @isolated(any) () async throws -> T
) async throws -> T {
  // Whichever of the two tasks reports first wins; the stream keeps only that report.
  let (outcomes, report) = AsyncStream.makeStream(
    of: Result<T, any Error>?.self, bufferingPolicy: .bufferingOldest(1))
  let work = Task {
    do {
      report.yield(.success(try await operation()))
    } catch {
      report.yield(.failure(error))
    }
  }
  let timer = Task {
    try? await Task.sleep(for: limit)
    report.yield(nil)
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
  if let outcome = first {
    return try outcome.get()
  }

  work.cancel()
  let message =
    "\(neverResumedMarker) \(operationName) did not finish within \(describe(limit)). "
    + "Likely cause: \(hint)."
  Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
  throw DeadlineExceeded(description: message)
}

/// "2 seconds" or "1.5 seconds": how a learner would say it, not `Duration`'s "2.0 seconds".
private func describe(_ limit: Duration) -> String {
  let (seconds, attoseconds) = limit.components
  if attoseconds == 0 { return seconds == 1 ? "1 second" : "\(seconds) seconds" }
  return "\(Double(seconds) + Double(attoseconds) / 1e18) seconds"
}
