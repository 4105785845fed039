import Foundation
import Testing

@testable import WorkbookCore

/// `workbook mutate` on Fixtures/VariantWorkbook, copied to
/// Runner/.build/mutants/VariantWorkbook, with exercise 1.1's solution replaced by one that
/// has a mutant of each kind: one the tests kill, one that does not compile, one that
/// survives (an equivalent: zero doubled is zero whether or not it is answered early).
@Suite(.serialized, .offThePool, .timeLimit(.minutes(10)))
struct MutationRunTests {
  static let fixture = Fixtures.folder.appendingPathComponent("VariantWorkbook")
  static let work = Fixtures.folder.deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent(".build/mutants/VariantWorkbook")
  static let solutionPath = "Solutions/01-Basics/01-Doubling.swift"
  static let solution = """
    /// Doubles `value`.
    public func double(_ value: Int) -> Int {
      // Zero doubles to itself: answered early.
      if value == 0 { return 0 }
      let twice: Int
      twice = value * 2
      return twice
    }

    """

  @Test func mutantsAreKilledNotCompiledOrSurviveAndTheReportExplainsThem() throws {
    try Fixtures.sync(Self.fixture, to: Self.work)
    try Self.solution.write(
      to: Self.work.appendingPathComponent(Self.solutionPath), atomically: true, encoding: .utf8)
    #expect(
      MutationGenerator.mutants(of: Self.solution).map { "\($0.line) \($0.summary)" } == [
        "4 delete", "4 `==` → `!=`", "6 delete",
      ])
    let binary = try GoldenTests.binary().path
    let first = try ChildProcess.run(
      binary, ["mutate", "--exercise", "1.1", "--write-report", "--root", Self.work.path],
      environment: ["NO_COLOR": "1"], in: Self.work, timeout: 600)
    #expect(first.termination == .exited(1), "\(first.stdout)\n\(first.stderr)")
    let survivor = try #require(MutationGenerator.mutants(of: Self.solution).first)
    #expect(
      first.stdout.contains(
        "  1.1  Doubling: 3 mutants: 1 killed (1 failed), 1 not compiled, 0 equivalent, "
          + "1 survivor\n      survived  line 4, delete: if value == 0 { return 0 }  "
          + "[\(survivor.id)]\n"), "\(first.stdout)")
    #expect(
      first.stdout.contains(
        "mutate: 3 mutants in 1 exercise: 1 killed, 1 not compiled, 0 equivalent, "
          + "1 unexplained survivor\n"))

    // The report lists the survivor as unexplained and is up to date.
    let reportURL = Self.work.appendingPathComponent(MutationReport.path)
    let written = try String(contentsOf: reportURL, encoding: .utf8)
    #expect(written.contains("## 1.1 Doubling\n"))
    #expect(
      written.contains(
        "- `\(survivor.id)` line 4, delete: `if value == 0 { return 0 }`\n  reason: UNEXPLAINED\n"
      ))
    #expect(MutationReport.staleExercises(root: Self.work).isEmpty)

    // Once explained, it counts as equivalent and the run passes.
    try written.replacingOccurrences(
      of: "reason: UNEXPLAINED", with: "reason: zero doubled is zero; the early answer is the same"
    ).write(to: reportURL, atomically: true, encoding: .utf8)
    let second = try ChildProcess.run(
      binary, ["mutate", "--exercise", "1.1", "--root", Self.work.path],
      environment: ["NO_COLOR": "1"], in: Self.work, timeout: 600)
    #expect(second.termination == .exited(0), "\(second.stdout)\n\(second.stderr)")
    #expect(second.stdout.contains("1 not compiled, 1 equivalent, 0 survivors\n"))
    // Progress went to stderr only, and the scratch copy has the solution back.
    #expect(!second.stdout.contains("graded,"))
    let tree = Self.work.appendingPathComponent(MutationRunner.folder + "/tree")
    #expect(
      FileManager.default.contentsEqual(
        atPath: tree.appendingPathComponent(Self.solutionPath).path,
        andPath: Self.work.appendingPathComponent(Self.solutionPath).path))

    // An edit to the solution makes its section stale.
    try (Self.solution + "// edited\n").write(
      to: Self.work.appendingPathComponent(Self.solutionPath), atomically: true, encoding: .utf8)
    #expect(MutationReport.staleExercises(root: Self.work) == ["1.1"])
  }
}
