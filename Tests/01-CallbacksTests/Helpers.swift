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
