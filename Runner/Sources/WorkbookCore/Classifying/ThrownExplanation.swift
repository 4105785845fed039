/// What a test was about when the learner's code threw where the test expected a value.
///
/// Swift Testing then records only "Caught error: <error>". `withDeadline` in
/// WorkbookTesting writes one line to stderr for each error that passes through it (only
/// when the runner sets `WORKBOOK_EXPLAIN`): `workbook-thrown: <test>\t<operation>\t<error>\t<hint>`.
/// Tests that expected the error print the line too, but pass, so it is read only for a
/// failing test whose issue is a caught error.
public struct ThrownExplanation: Sendable, Equatable {
  public static let marker = "workbook-thrown:"
  /// Set in each test process's environment; WorkbookTesting writes the lines only then.
  public static let environmentKey = "WORKBOOK_EXPLAIN"

  public var test: String
  public var operation: String
  public var error: String
  public var hint: String

  /// The last explanation printed for the test titled `test`, if any.
  public static func find(in stderr: String, test: String) -> ThrownExplanation? {
    var found: ThrownExplanation?
    for line in stderr.split(separator: "\n") where line.hasPrefix(marker) {
      let fields = line.dropFirst(marker.count).drop { $0 == " " }
        .split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
      guard fields.count == 4, fields[0] == test else { continue }
      found = ThrownExplanation(
        test: fields[0], operation: fields[1], error: fields[2], hint: fields[3])
    }
    return found
  }

  /// The detail line a learner reads under the verdict.
  public var detail: String {
    "\(operation) threw \(error), where this test expected it to finish without an error; "
      + "the test's hint: \(hint)"
  }
}
