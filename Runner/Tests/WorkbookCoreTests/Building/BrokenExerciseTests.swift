import Foundation
import Testing

@testable import WorkbookCore

/// One exercise's compile error never hides the others: in the fixture's chapter 2, 2.1
/// does not compile (a typo), 2.2 is independent, and 2.3 uses 2.1's `half`. These run
/// the built `workbook` on the fixture, as a learner would, in GoldenTests' serialized
/// suite (they share its work copy).
extension GoldenTests {
  /// The solution of 2.2 in the work copy, as a learner who solved it.
  static func solveNegating() throws {
    let solution = fixture.appendingPathComponent("Solutions/02-Broken/02-Negating.swift")
    let target = work.appendingPathComponent("Chapters/02-Broken/02-Negating.swift")
    try? FileManager.default.removeItem(at: target)
    try FileManager.default.copyItem(at: solution, to: target)
  }

  @Test func aSolvedExerciseIsGradedWhileAnotherFileOfItsChapterIsBroken() throws {
    defer { try? Self.syncFixture() }
    try? FileManager.default.removeItem(at: Self.work.appendingPathComponent(".workbook"))
    try Self.solveNegating()
    let result = try Self.workbook(["check", "--exercise", "2.2"])
    #expect(result.status == 0, "2.2 is solved; 2.1's typo must not stop it being graded")
    #expect(result.stdout.contains("✔ 2.2  Negating  passed"))
    // One line says which other exercise is broken, and where.
    let notes = result.stdout.split(separator: "\n").filter { $0.contains("left out") }
    #expect(notes.count == 1, "one line names 2.1: \(result.stdout)")
    #expect(notes.first?.contains("2.1 Halving was left out of this check") == true)
    #expect(
      notes.first?.contains("Chapters/02-Broken/01-Halving.swift:3:3: cannot find 'valu'")
        == true)
    // The next step is the broken file, not an exercise that passed.
    #expect(result.stdout.contains("next: 2.1 Halving — edit Chapters/02-Broken/01-Halving.swift"))
    #expect(!result.stdout.contains("not graded"))
    let progress = ProgressStore(root: Self.work).load()
    #expect(progress["2.2"].verdict == .passed)
    #expect(progress["2.1"].verdict == .doesNotCompile, "the broken exercise's verdict is kept")
  }

  @Test func aChapterCheckGradesEveryExerciseThatCompiles() throws {
    defer { try? Self.syncFixture() }
    try Self.solveNegating()
    let result = try Self.workbook(["check", "--chapter", "2", "--json"])
    #expect(result.status == 1)
    let report = try JSONDecoder().decode(CheckReport.self, from: Data(result.stdout.utf8))
    let exercises = report.chapters.flatMap(\.exercises)
    #expect(exercises.map(\.verdict) == [.doesNotCompile, .passed, .doesNotCompile])
    #expect(exercises.first?.details.first?.contains("cannot find 'valu' in scope") == true)
    #expect(
      exercises.last?.details == [
        "uses your `half` from 2.1 (Halving), which does not compile; fix 2.1 first "
          + "(make check EXERCISE=2.1 shows its errors)"
      ])
    #expect(report.next?.id == "2.1", "next points at the broken file")
  }

  @Test func anExerciseThatUsesABrokenOneSaysWhich() throws {
    let result = try Self.workbook(["check", "--exercise", "2.3"])
    #expect(result.status == 1)
    #expect(result.stdout.contains("✖ 2.3  Quartering  does not compile"))
    #expect(result.stdout.contains("uses your `half` from 2.1 (Halving), which does not compile"))
    #expect(result.stdout.contains("next: 2.1 Halving"))
  }

  @Test func aBrokenExerciseShowsItsOwnErrors() throws {
    let result = try Self.workbook(["check", "--exercise", "2.1"])
    #expect(result.status == 1)
    #expect(result.stdout.contains("✖ 2.1  Halving  does not compile"))
    #expect(
      result.stdout.contains("Chapters/02-Broken/01-Halving.swift:3:3: error: cannot find 'valu'"))
    #expect(!result.stdout.contains("Quartering"), "2.3 was not selected and is not broken")
  }

  @Test func aPassingSingleCheckPointsToTheNextExercise() throws {
    try? FileManager.default.removeItem(at: Self.work.appendingPathComponent(".workbook"))
    let result = try Self.workbook(["check", "--exercise", "1.1"])
    #expect(result.status == 0)
    #expect(
      result.stdout.contains("next: 1.2 Doubling — edit Chapters/01-Basics/02-Doubling.swift"))
  }

  @Test func statusSaysWhenAFileChangedSinceItsLastCheck() throws {
    defer { try? Self.syncFixture() }
    try? FileManager.default.removeItem(at: Self.work.appendingPathComponent(".workbook"))
    _ = try Self.workbook(["check", "--exercise", "1.1"])
    let before = try Self.workbook(["status", "--chapter", "1"])
    #expect(before.stdout.contains("1.1  Adding            passed at its last check"))
    let file = Self.work.appendingPathComponent("Chapters/01-Basics/01-Adding.swift")
    try (String(contentsOf: file, encoding: .utf8) + "// an edit\n").write(
      to: file, atomically: true, encoding: .utf8)
    let after = try Self.workbook(["status", "--chapter", "1"])
    #expect(
      after.stdout.contains("1.1  Adding            changed since its last check (passed then)"))
    #expect(after.status == 1)
  }

  @Test func hintAllShowsEveryHintRevealedSoFar() throws {
    try? FileManager.default.removeItem(at: Self.work.appendingPathComponent(".workbook"))
    let none = try Self.workbook(["hint", "1.4", "--all"])
    #expect(none.stdout.contains("No hint for 1.4 Blocking is shown yet"))
    _ = try Self.workbook(["hint", "1.4"])
    _ = try Self.workbook(["hint", "1.4"])
    let all = try Self.workbook(["hint", "1.4", "--all"])
    #expect(all.status == 0)
    #expect(
      all.stdout == """
        Hints shown so far for 1.4 Blocking (2 of 2):
          1. Who signals the semaphore?
          2. Call `done.signal()` in the callback.

        """)
    // Reading them again reveals nothing new.
    #expect(ProgressStore(root: Self.work).load()["1.4"].hintsShown == 2)
  }
}

/// ``PartialBuild`` on diagnostics alone: which exercises a failed build leaves out, and why.
@Suite(.offThePool) struct PartialBuildTests {
  static let root = Fixtures.folder.appendingPathComponent("MiniWorkbook")
  static let chapter: Chapter = {
    let workbook = try? MetadataLoader.load(root: root)
    return workbook!.chapter(number: 2)!
  }()

  static func error(_ path: String, _ message: String) -> Diagnostic {
    Diagnostic(
      path: root.appendingPathComponent(path).path, line: 3, column: 3, severity: .error,
      message: message)
  }

  static func failed(_ diagnostics: [Diagnostic]) -> BuildResult {
    BuildResult(succeeded: false, output: "", diagnostics: diagnostics, testProduct: nil)
  }

  @Test func leavesOutTheExerciseWithErrorsThenTheOneThatUsesIt() {
    var plan = PartialBuild(chapter: Self.chapter, source: .learner, root: Self.root)
    let first = plan.leaveOut(
      after: Self.failed([
        Self.error("Chapters/02-Broken/01-Halving.swift", "cannot find 'valu' in scope")
      ]))
    #expect(first, "another build is worth it: 2.2 and 2.3 remain")
    #expect(plan.remaining.map(\.id) == ["2.2", "2.3"])
    #expect(
      plan.skippedFiles == [
        "Chapters/02-Broken/01-Halving.swift", "Tests/02-BrokenTests/01-HalvingTests.swift",
      ])
    let second = plan.leaveOut(
      after: Self.failed([
        Self.error("Chapters/02-Broken/03-Quartering.swift", "cannot find 'half' in scope")
      ]))
    #expect(second)
    #expect(plan.reason(for: "2.3") == .needs([LeftOut.Need(exercise: "2.1", name: "half")]))
    #expect(plan.remaining.map(\.id) == ["2.2"])
  }

  @Test func aNameOnTheErrorsLineTellsWhichExerciseIsNeeded() {
    var plan = PartialBuild(chapter: Self.chapter, source: .learner, root: Self.root)
    _ = plan.leaveOut(
      after: Self.failed([Self.error("Chapters/02-Broken/01-Halving.swift", "cannot find 'valu'")]))
    var labels = Self.error("Chapters/02-Broken/03-Quartering.swift", "extra argument in call")
    labels.sourceLine = "  half(half(value))"
    _ = plan.leaveOut(after: Self.failed([labels]))
    #expect(plan.reason(for: "2.3") == .needs([LeftOut.Need(exercise: "2.1", name: "half")]))
  }

  @Test func errorsOfTheLaterPassAreTheExercisesOwnEvenAfterOthersWereLeftOut() {
    // Swift reports "sending 'x' risks causing data races" only once the files compiled with
    // this one type-check: the error shows up in the second build, and it is 2.2's own.
    var plan = PartialBuild(chapter: Self.chapter, source: .learner, root: Self.root)
    _ = plan.leaveOut(
      after: Self.failed([Self.error("Chapters/02-Broken/01-Halving.swift", "cannot find 'valu'")]))
    let sending = Self.error(
      "Chapters/02-Broken/02-Negating.swift",
      "sending 'half' risks causing data races [#SendingRisksDataRace]")
    _ = plan.leaveOut(after: Self.failed([sending]))
    #expect(plan.reason(for: "2.2") == .errors([sending], inTests: false))
  }

  @Test func anExerciseInAModuleOfItsOwnHasOnlyItsOwnErrors() {
    // 2.2 in a subfolder, a module of its own: it could not use 2.1's code, and its module
    // was not compiled while the chapter's had errors.
    var chapter = Self.chapter
    chapter.exercises[1].file = "Sub/02-Negating.swift"
    var plan = PartialBuild(chapter: chapter, source: .learner, root: Self.root)
    _ = plan.leaveOut(
      after: Self.failed([Self.error("Chapters/02-Broken/01-Halving.swift", "cannot find 'valu'")]))
    let own = Self.error("Chapters/02-Broken/Sub/02-Negating.swift", "ambiguous use of operator")
    _ = plan.leaveOut(after: Self.failed([own]))
    #expect(plan.reason(for: "2.2") == .errors([own], inTests: false))
  }

  @Test func anExerciseThatFailsOnlyOnceOthersAreLeftOutNeedsThemEvenUnnamed() {
    var plan = PartialBuild(chapter: Self.chapter, source: .learner, root: Self.root)
    _ = plan.leaveOut(
      after: Self.failed([Self.error("Chapters/02-Broken/01-Halving.swift", "cannot find 'valu'")]))
    let own = Self.error("Chapters/02-Broken/02-Negating.swift", "ambiguous use of operator")
    _ = plan.leaveOut(after: Self.failed([own]))
    #expect(plan.reason(for: "2.2") == .needs([LeftOut.Need(exercise: "2.1")]))
    #expect(
      CompileFailure.neededLines([LeftOut.Need(exercise: "2.1")], chapter: Self.chapter) == [
        "uses your code from 2.1 (Halving), which does not compile; fix 2.1 first "
          + "(make check EXERCISE=2.1 shows its errors)"
      ])
  }

  @Test func errorsInATestFileCountAgainstItsExercise() {
    var plan = PartialBuild(chapter: Self.chapter, source: .learner, root: Self.root)
    let error = Self.error("Tests/02-BrokenTests/02-NegatingTests.swift", "extra argument")
    let rebuild = plan.leaveOut(after: Self.failed([error]))
    #expect(rebuild)
    #expect(plan.reason(for: "2.2") == .errors([error], inTests: true))
  }

  @Test func anErrorOutsideEveryExerciseStopsLeavingOut() {
    var plan = PartialBuild(chapter: Self.chapter, source: .learner, root: Self.root)
    let rebuild = plan.leaveOut(
      after: Self.failed([
        Self.error("Chapters/02-Broken/01-Halving.swift", "cannot find 'valu' in scope"),
        Self.error("Tests/02-BrokenTests/Helpers.swift", "cannot find 'x' in scope"),
      ]))
    #expect(!rebuild, "a helper's error cannot be built around")
    #expect(plan.reason(for: "2.1") != nil, "2.1's own error is still its own")
  }

  @Test func aFailedBuildWithoutLocatedErrorsBuildsNoMore() {
    var plan = PartialBuild(chapter: Self.chapter, source: .learner, root: Self.root)
    let rebuild = plan.leaveOut(after: Self.failed([]))
    #expect(!rebuild)
    #expect(plan.leftOut.isEmpty)
  }

  @Test func stressTestFilesBelongToTheirExercise() {
    let chapter = Chapter(
      number: 3, folder: "03-X", module: "X", title: "X",
      exercises: [Exercise(id: "3.2", name: "Once", file: "02-ResumeOnce.swift", suite: "S")])
    #expect(PartialBuild.numberPrefix("02-ResumeOnce.swift") == "02-")
    #expect(PartialBuild.numberPrefix("Helpers.swift") == nil)
    let plan = PartialBuild(chapter: chapter, source: .learner, root: Self.root)
    #expect(
      plan.testFiles(of: chapter.exercises[0]) == ["Tests/03-XTests/02-ResumeOnceTests.swift"])
  }
}
