import Foundation
import Testing

@testable import WorkbookCore

/// `workbook mistakes` on Fixtures/VariantWorkbook, copied to
/// Runner/.build/variants/VariantWorkbook (only changed files are copied, so its build
/// folders stay warm). Exercise 1.1 has a mistake caught with its phrase, one whose phrase
/// is absent (and, batched with 1.2's mistake in the first round, is run again alone), one
/// the tests let pass, a patch that does not apply, one that does not compile (a round of
/// its own), an alternative that passes and one that fails; 1.2 has a mistake caught.
@Suite(.serialized, .offThePool, .timeLimit(.minutes(15)))
struct MistakesTests {
  static let fixture = Fixtures.folder.appendingPathComponent("VariantWorkbook")
  static let work = Fixtures.folder.deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent(".build/variants/VariantWorkbook")

  @Test func mistakesChecksEveryVariantAndRestoresTheTree() throws {
    try Fixtures.sync(Self.fixture, to: Self.work)
    let outcome = try ChildProcess.run(
      try GoldenTests.binary().path, ["mistakes", "--root", Self.work.path],
      environment: ["NO_COLOR": "1"], in: Self.work, timeout: 900)
    #expect(outcome.termination == .exited(1))
    let lines = outcome.stdout.split(separator: "\n").map(String.init)
    let checks = lines.filter { $0.hasPrefix("  ok") || $0.hasPrefix("  FAIL") }
      .map { $0.replacing(#/ \(\d+\.\d s\)$/#, with: "") }
    #expect(
      checks == [
        #"  FAIL  1.1 mistake "returns the input": failed, but lacks the phrase "overflow""#,
        #"  ok    1.1 mistake "adds two": failed"#,
        #"  FAIL  1.1 mistake "shifts left": graded passed, expected failed"#,
        #"  FAIL  1.1 mistake "against another file": the patch does not apply"#,
        #"  ok    1.1 mistake "multiplies by a string": does not compile"#,
        #"  ok    1.1 alternative "adds it to itself": passed"#,
        #"  FAIL  1.1 alternative "doubles the magnitude": graded failed, expected passed"#,
        #"  ok    1.2 mistake "returns the input": failed"#,
      ], "\(outcome.stdout)\n\(outcome.stderr)")
    #expect(lines.last == "mistakes: 4 passed, 4 failed")
    // The details under a FAIL: what the tests said, and where a patch stopped applying.
    #expect(outcome.stdout.contains("\n          double(2) should be 4\n"))
    #expect(
      outcome.stdout.contains(
        "\n          every test passed: the tests do not catch this mistake\n"))
    #expect(
      outcome.stdout.contains(
        "\n          Mistakes/01-Basics/1.1-against-another-file.patch: hunk 1 (@@ -2,4 +2,4 @@) "
          + "does not apply: line 3 should be `  // Twice the value.`"))
    // A test process's time is shown on each graded line.
    #expect(
      lines.contains { $0.hasPrefix(#"  ok    1.1 alternative "adds it to itself": passed ("#) })
    Self.expectTreesRestored()
    for folder in [VariantTree.folder, VariantTree.secondFolder] {
      let tree = Self.work.appendingPathComponent(folder + "/tree")
      #expect(
        !FileManager.default.fileExists(atPath: tree.appendingPathComponent("Chapters").path))
    }
  }

  @Test func oneExerciseAndUsageErrors() throws {
    try Fixtures.sync(Self.fixture, to: Self.work)
    let binary = try GoldenTests.binary().path
    let one = try ChildProcess.run(
      binary, ["mistakes", "--exercise", "1.2", "--root", Self.work.path],
      environment: ["NO_COLOR": "1"], in: Self.work, timeout: 600)
    #expect(one.termination == .exited(0))
    #expect(one.stdout.hasSuffix("mistakes: 1 passed, 0 failed\n"))
    let unknown = try ChildProcess.run(
      binary, ["mistakes", "--chapter", "7", "--root", Self.work.path], in: Self.work,
      timeout: 60)
    #expect(unknown.termination == .exited(2))
    #expect(unknown.stderr == "workbook: there is no chapter 7. Valid chapters: 1 (Basics).\n")
  }

  @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/stat"), "reads /proc"))
  func ctrlCStopsTheRoundAndRestoresTheTree() throws {
    try Fixtures.sync(Self.fixture, to: Self.work)
    // An edit to a test file, so that every round has something to compile for a while.
    let test = Self.work.appendingPathComponent("Tests/01-BasicsTests/02-NegatingTests.swift")
    let original = try Data(contentsOf: test)
    try (original + Data("\n// edited \(UUID().uuidString)\n".utf8)).write(to: test)
    defer { try? original.write(to: test) }
    let runner = try Launched(
      try GoldenTests.binary(), ["mistakes", "--exercise", "1.1"], root: Self.work)
    defer { runner.kill() }
    // A round's build runs with its variant applied to the tree.
    try #require(Processes.waitForOne(Self.work.path, also: "swift-build", seconds: 120))
    runner.signal(SIGINT)
    let status = try #require(runner.wait(seconds: 5), "still running 5 s after Ctrl-C")
    #expect(status == 130)
    #expect(runner.stderr.contains("workbook: interrupted"))
    #expect(Processes.waitUntilGone(Self.work.path).isEmpty)
    Self.expectTreesRestored()
  }

  /// Both trees' solutions are the workbook's again (rounds build in them by turns).
  static func expectTreesRestored(sourceLocation: SourceLocation = #_sourceLocation) {
    for folder in [VariantTree.folder, VariantTree.secondFolder] {
      let tree = work.appendingPathComponent(folder + "/tree")
      for file in ["01-Doubling.swift", "02-Negating.swift"] {
        let path = "Solutions/01-Basics/\(file)"
        #expect(
          FileManager.default.contentsEqual(
            atPath: tree.appendingPathComponent(path).path,
            andPath: work.appendingPathComponent(path).path),
          "\(folder): \(path) was not restored", sourceLocation: sourceLocation)
      }
    }
  }

  // MARK: judging, without running anything

  static let mistake = Variant(
    kind: .mistake, name: "forgets", source: "Mistakes/x.patch", expected: .neverResumed,
    phrase: "Never Resumed", exerciseID: "1.2")

  @Test func aMistakeMatchesOnVerdictAndPhraseIgnoringCase() {
    let caught = MistakeChecker.judge(
      Self.mistake,
      VariantOutcome(grade: Grade(.neverResumed, ["Never resumed: x"]), seconds: 3.14),
      timeout: 30)
    #expect(caught == CheckResult(#"1.2 mistake "forgets": never resumed (3.1 s)"#))
    let wrongVerdict = MistakeChecker.judge(
      Self.mistake, VariantOutcome(grade: Grade(.failed, ["Never resumed"]), seconds: 1),
      timeout: 30)
    #expect(
      wrongVerdict.name == #"1.2 mistake "forgets": graded failed, expected never resumed (1.0 s)"#)
    #expect(wrongVerdict.problems == ["Never resumed"])
    let noPhrase = MistakeChecker.judge(
      Self.mistake, VariantOutcome(grade: Grade(.neverResumed, ["timed out"]), seconds: 1),
      timeout: 30)
    #expect(noPhrase.name.contains(#"never resumed, but lacks the phrase "Never Resumed""#))
  }

  @Test func aHangGradedByTheProcessLimitFails() {
    let outcome = VariantOutcome(
      grade: Grade(.neverResumed, ["Never resumed: still running after 30 s"]), seconds: 30.2,
      timedOut: true)
    let result = MistakeChecker.judge(Self.mistake, outcome, timeout: 30)
    #expect(
      result.name
        == #"1.2 mistake "forgets": graded by the 30 s process limit, not by a test deadline (30.2 s)"#
    )
    #expect(!result.passed)
  }

  @Test func anAlternativeMustPass() {
    let alternative = Variant(
      kind: .alternative, name: "switch", source: "Alternatives/x.swift", expected: .passed,
      phrase: nil, exerciseID: "1.2")
    #expect(
      MistakeChecker.judge(
        alternative, VariantOutcome(grade: Grade(.passed), seconds: 2), timeout: 30
      )
      .passed)
    #expect(
      !MistakeChecker.judge(alternative, VariantOutcome(grade: Grade(.crashed, ["x"])), timeout: 30)
        .passed)
  }

  @Test func aNotedAlternativePassesWithItsNotesAndNoOtherCaution() {
    let note = { (id: String, type: NoteType) in
      Note(id: id, type: type, line: 3, column: 5, lines: [3], message: "why \(id)")
    }
    let noted = Variant(
      kind: .alternative, name: "detached", source: "Alternatives/x.patch", expected: .passed,
      phrase: nil, exerciseID: "1.2", notes: ["task-detached"])
    let plain = Variant(
      kind: .alternative, name: "plain", source: "Alternatives/y.patch", expected: .passed,
      phrase: nil, exerciseID: "1.2")
    func judge(_ variant: Variant, _ notes: [Note]) -> CheckResult {
      MistakeChecker.judge(
        variant, VariantOutcome(grade: Grade(.passed, notes: notes), seconds: 1), timeout: 30)
    }
    let earned = judge(noted, [note("task-detached", .actionable), note("mutex", .celebratory)])
    #expect(
      earned
        == CheckResult(#"1.2 alternative "detached": passed with the note "task-detached" (1.0 s)"#)
    )
    let without = judge(noted, [])
    #expect(
      without.name
        == #"1.2 alternative "detached": passed, but without the note "task-detached" (1.0 s)"#)
    #expect(without.problems == ["(no note)"])
    let extra = judge(
      noted, [note("task-detached", .actionable), note("task-in-loop", .actionable)])
    #expect(!extra.passed)
    #expect(extra.problems == ["note (actionable), line 3: why task-in-loop"])
    #expect(judge(plain, [note("mutex", .celebratory)]).passed)
    #expect(!judge(plain, [note("unsafe-continuation", .actionable)]).passed)
  }

  @Test func repeatedRunsMustAllBeAsExpected() {
    let caught = VariantOutcome(grade: Grade(.neverResumed, ["Never resumed: x"]), seconds: 2)
    let missed = VariantOutcome(grade: Grade(.passed), seconds: 1)
    let all = MistakeChecker.judge(Self.mistake, [caught, caught, caught], timeout: 30)
    #expect(all == CheckResult(#"1.2 mistake "forgets": never resumed (2.0 s), 3 of 3 runs"#))
    let once = MistakeChecker.judge(Self.mistake, [caught, missed, caught], timeout: 30)
    #expect(!once.passed)
    #expect(
      once.name
        == #"1.2 mistake "forgets": graded passed, expected never resumed (1.0 s); 1 of 3 runs were not as expected"#
    )
  }
}
