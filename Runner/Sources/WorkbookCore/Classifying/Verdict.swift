/// What the runner concluded about one exercise. The raw values are the words the learner
/// sees, the values in `--json` output, and the values of `starterVerdict` in workbook.json.
public enum Verdict: String, Sendable, Codable, CaseIterable, Equatable {
  case passed
  /// The starter is byte-identical to the shipped one and its tests fail.
  case notStarted = "not started"
  /// A test failed with an ordinary failed expectation.
  case failed
  /// A continuation was never resumed: the deadline helper recorded "Never resumed:", or
  /// the tests were still running at the runner's time limit.
  case neverResumed = "never resumed"
  /// The test process stopped at a runtime trap (double resume, isolation check, …).
  case crashed
  /// The chapter's module or its tests did not compile.
  case doesNotCompile = "does not compile"

  public var symbol: String {
    switch self {
    case .passed: "✔"
    case .notStarted: "○"
    case .failed: "✘"
    case .neverResumed: "⧖"
    case .crashed: "✱"
    case .doesNotCompile: "✖"
    }
  }
}

/// A verdict with the lines that explain it, as shown under the exercise.
public struct Grade: Sendable, Equatable {
  public var verdict: Verdict
  public var details: [String]
  /// The notes a passing answer earned; empty for any other verdict.
  public var notes: [Note]

  public init(_ verdict: Verdict, _ details: [String] = [], notes: [Note] = []) {
    self.verdict = verdict
    self.details = details
    self.notes = notes
  }
}
