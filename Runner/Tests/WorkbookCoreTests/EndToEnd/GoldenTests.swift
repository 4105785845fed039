import Foundation
import Testing

@testable import WorkbookCore

/// Runs the built `workbook` binary on the MiniWorkbook fixture (one exercise per verdict,
/// plus a chapter that does not compile) and compares its output, with absolute paths and
/// timings normalised, to the files in Fixtures/Golden. `UPDATE_GOLDEN=1 swift test`
/// rewrites them.
///
/// The fixture is copied to Runner/.build/golden/MiniWorkbook (only files whose content
/// changed are copied, so its build folders stay warm between runs) and graded there; the
/// committed fixture is never written to.
@Suite(.serialized, .offThePool, .timeLimit(.minutes(10)))
struct GoldenTests {
  static let fixture = Fixtures.folder.appendingPathComponent("MiniWorkbook")
  static let golden = Fixtures.folder.appendingPathComponent("Golden")
  static let work = Fixtures.folder.deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent(".build/golden/MiniWorkbook")
  static let update = ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1"

  init() throws {
    try Self.syncFixture()
  }

  @Test func checkPrintsEveryVerdict() throws {
    try? FileManager.default.removeItem(at: Self.work.appendingPathComponent(".workbook"))
    let result = try Self.workbook(["check", "--timeout", "3"])
    #expect(result.status == 1)
    try Self.compare(result.stdout, golden: "check.txt")
    // Without a terminal, only a long wait prints (plain progress lines); nothing else.
    #expect(withoutProgressLines(result.stderr).isEmpty)
    // The progress file now has every verdict.
    let progress = ProgressStore(root: Self.work).load { _ in Issue.record("unexpected notice") }
    #expect(progress["1.5"].verdict == .crashed)
    #expect(progress["2.1"].verdict == .doesNotCompile)
    #expect(progress["2.2"].verdict == .notStarted)
    #expect(progress["2.3"].verdict == .doesNotCompile)
  }

  @Test func checkJSONFollowsTheSchema() throws {
    let result = try Self.workbook(["check", "--json", "--timeout", "3"])
    #expect(result.status == 1)
    try Self.compare(result.stdout, golden: "check.json")
    let report = try JSONDecoder().decode(CheckReport.self, from: Data(result.stdout.utf8))
    #expect(
      report.chapters.flatMap(\.exercises).map(\.verdict) == [
        .passed, .failed, .neverResumed, .neverResumed, .crashed, .crashed, .notStarted,
        .doesNotCompile, .notStarted, .doesNotCompile,
      ])
    #expect(report.totals.percent == 10)
    #expect(report.next?.id == "1.2")
  }

  @Test func checkExitsZeroWhenEverythingCheckedPassed() throws {
    let result = try Self.workbook(["check", "--exercise", "1.1"])
    #expect(result.status == 0)
    #expect(result.stdout.contains("✔ 1.1  Adding  passed"))
    #expect(result.stdout.contains("Progress [████████████████████] 1/1 passed (100%)"))
  }

  @Test func unknownChapterOrExerciseExitsTwoListingTheValidOnes() throws {
    let chapter = try Self.workbook(["check", "--chapter", "9"])
    #expect(chapter.status == 2)
    #expect(chapter.stdout == "")
    #expect(
      chapter.stderr == "workbook: there is no chapter 9. Valid chapters: 1 (Basics), 2 (Broken).\n"
    )
    let exercise = try Self.workbook(["hint", "3.1"])
    #expect(exercise.status == 2)
    #expect(
      exercise.stderr
        == "workbook: there is no exercise 3.1. Valid exercises: 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 2.1, 2.2, 2.3.\n"
    )
  }

  @Test func hintsRevealInOrderAndAreRemembered() throws {
    try? FileManager.default.removeItem(at: Self.work.appendingPathComponent(".workbook"))
    let outputs = try (1...3).map { _ in try Self.workbook(["hint", "1.4"]) }
    #expect(outputs.allSatisfy { $0.status == 0 })
    try Self.compare(outputs.map(\.stdout).joined(separator: "---\n"), golden: "hint.txt")
    #expect(ProgressStore(root: Self.work).load()["1.4"].hintsShown == 2)
  }

  @Test func verifyReportsEachCheckAndTheCount() throws {
    let result = try Self.workbook(["verify", "--timeout", "3"])
    #expect(result.status == 1)
    try Self.compare(result.stdout, golden: "verify.txt")
    #expect(result.stdout.hasSuffix("verify: 31 passed, 2 failed\n"))
  }

  @Test func fingerprintRewritesOnlyTheDigests() throws {
    defer { try? Self.syncFixture() }
    let first = try Self.workbook(["fingerprint"])
    #expect(first.status == 0)
    try Self.compare(first.stdout, golden: "fingerprint.txt")
    let again = try Self.workbook(["fingerprint"])
    #expect(again.stdout == "workbook.json: all 10 starter digests are up to date\n")
    let before = try String(
      contentsOf: Self.fixture.appendingPathComponent("workbook.json"), encoding: .utf8)
    let after = try String(
      contentsOf: Self.work.appendingPathComponent("workbook.json"), encoding: .utf8)
    let changed = zip(before.split(separator: "\n"), after.split(separator: "\n")).filter {
      $0 != $1
    }
    #expect(changed.count == 2)
    #expect(changed.allSatisfy { $0.0.contains("starterDigest") })
  }

  // MARK: helpers

  struct Result {
    var status: Int32
    var stdout: String
    var stderr: String
  }

  /// Runs the built `workbook` in the work copy with NO_COLOR=1.
  static func workbook(_ arguments: [String]) throws -> Result {
    let outcome = try ChildProcess.run(
      try binary().path, arguments + ["--root", work.path], environment: ["NO_COLOR": "1"],
      in: work, timeout: 600)
    guard case .exited(let status) = outcome.termination else {
      Issue.record("workbook \(arguments) ended with \(outcome.termination)")
      return Result(status: -1, stdout: outcome.stdout, stderr: outcome.stderr)
    }
    return Result(
      status: status, stdout: outcome.stdout, stderr: withoutProgressLines(outcome.stderr))
  }

  /// The `workbook` built next to this test bundle.
  static func binary() throws -> URL {
    let candidates = [
      URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
      Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent(),
    ].map { $0.appendingPathComponent("workbook") }
    guard
      let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) })
    else {
      throw WorkbookError.failure("no workbook binary next to the tests: \(candidates)")
    }
    return found
  }

  /// Absolute paths and timings removed.
  static func normalise(_ text: String) -> String {
    var text = text.replacingOccurrences(of: work.path, with: "<root>")
    text = text.replacing(#/\d+\.\d+ seconds/#, with: "<time> seconds")
    // A mistake's or alternative's grading time, as verify prints it: "(0.0 s)".
    text = text.replacing(#/\(\d+\.\d+ s\)/#, with: "(<time> s)")
    return text
  }

  static func compare(_ output: String, golden name: String) throws {
    let actual = normalise(output)
    let url = golden.appendingPathComponent(name)
    if update {
      try FileManager.default.createDirectory(at: golden, withIntermediateDirectories: true)
      try Data(actual.utf8).write(to: url)
      return
    }
    let expected = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    guard actual != expected else { return }
    let actualLines = actual.split(separator: "\n", omittingEmptySubsequences: false)
    let expectedLines = expected.split(separator: "\n", omittingEmptySubsequences: false)
    let index =
      zip(actualLines, expectedLines).enumerated().first { $0.element.0 != $0.element.1 }?.offset
      ?? min(actualLines.count, expectedLines.count)
    let got = index < actualLines.count ? String(actualLines[index]) : "(end of output)"
    let wanted = index < expectedLines.count ? String(expectedLines[index]) : "(end of file)"
    Issue.record(
      """
      output differs from Golden/\(name) at line \(index + 1) (UPDATE_GOLDEN=1 regenerates):
        expected: \(wanted)
        actual:   \(got)
      full output:
      \(actual)
      """)
  }

  /// Makes the work copy match the fixture (see ``Fixtures/sync(_:to:)``).
  static func syncFixture() throws {
    try Fixtures.sync(fixture, to: work)
  }

}
