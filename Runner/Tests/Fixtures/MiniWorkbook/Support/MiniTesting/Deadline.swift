import Testing

/// A minimal stand-in for the workbook's `withDeadline`: same marker, same behaviour.
public let neverResumedMarker = "Never resumed:"

public struct DeadlineExceeded: Error {}

/// Runs `operation`; if it is still suspended after `limit`, records an issue that starts
/// with ``neverResumedMarker`` and throws instead of waiting forever.
public func withDeadline<T: Sendable>(
  _ limit: Duration = .seconds(1),
  _ operationName: String,
  hint: String,
  sourceLocation: SourceLocation = #_sourceLocation,
  _ operation: sending @escaping @isolated(any) () async throws -> T
) async throws -> T {
  let (outcomes, report) = AsyncStream.makeStream(
    of: Result<T, any Error>?.self, bufferingPolicy: .bufferingOldest(1))
  let work = Task {
    do { report.yield(.success(try await operation())) } catch { report.yield(.failure(error)) }
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
  if let outcome = first { return try outcome.get() }
  work.cancel()
  let message =
    "\(neverResumedMarker) \(operationName) did not finish within \(limit). Likely cause: \(hint)."
  Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
  throw DeadlineExceeded()
}
