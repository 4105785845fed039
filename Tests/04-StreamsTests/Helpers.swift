import Testing
import WorkbookTesting

/// A test's explanation, for one too long to write as a single literal.
func because(_ explanation: String) -> Comment {
  Comment(rawValue: explanation)
}

/// The phrase every message about a late registration uses, so that a learner who set a
/// handler, a delegate or a continuation too late reads the same advice wherever it shows.
let registerFirst = "store or subscribe before you start"

/// Thrown by ``withDeadline(_:_:diagnosis:sourceLocation:_:)`` when the operation is still
/// running at the deadline.
struct StillWaiting: Error, CustomStringConvertible {
  let description: String
}

/// Runs `operation` like `withDeadline(_:_:hint:sourceLocation:_:)` does, but works out the
/// likely cause only at the deadline, from what the fakes have seen by then.
///
/// A loop that waits forever looks the same from outside whatever the cause: a stream that is
/// never finished, a delegate set after the source already reported, a continuation handed to
/// legacy code after it already delivered. The fakes can tell them apart once the time is up,
/// so `diagnosis` is called then, and its answer is the "Likely cause" of the `Never resumed:`
/// issue that the runner grades "never resumed".
func withDeadline<T: Sendable>(
  _ limit: Duration = .seconds(2),
  _ operationName: String,
  diagnosis: @escaping @Sendable () -> String,
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
    work.cancel()
    throw CancellationError()
  }
  if let outcome = first {
    return try outcome.get()
  }

  // Judge before cancelling: cancelling the loop ends the stream, which changes what the fakes
  // see (a stopped source, a delegate let go).
  let cause = diagnosis()
  work.cancel()
  let (whole, attoseconds) = limit.components
  let within =
    attoseconds != 0
    ? "\(Double(whole) + Double(attoseconds) / 1e18) seconds"
    : whole == 1 ? "1 second" : "\(whole) seconds"
  let message =
    "\(neverResumedMarker) \(operationName) did not finish within \(within). "
    + "Likely cause: \(cause)."
  Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
  throw StillWaiting(description: message)
}
