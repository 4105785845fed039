import Foundation
import Testing

@testable import WorkbookCore

/// The mutant generator on small sources, the report's format, staleness, and the
/// `mutate` command line.
@Suite struct MutationTests {
  static let source = """
    import Foundation

    /// A counter.
    final class Counter: Sendable {
      private let limit: Int

      init(limit: Int) {
        self.limit = limit
      }

      /// Whether `value` is under the limit.
      func allows(_ value: Int) -> Bool {
        value < limit
      }

      func report(_ value: Int, to log: (String) -> Void) {
        // A comment with a < b and true in it.
        log("checked: a < b is true")
        if value >= limit {
          log("over")
        }
        let unused = value * 2
        let kept = value + 1
        log("\\(kept)")
        run {
          log("in a closure")
        }
      }
    }
    """

  static func describe(_ mutants: [Mutant]) -> [String] {
    mutants.map { "\($0.line) \($0.summary)" }
  }

  @Test func deletesStatementsAndFlipsComparisonsAndBooleans() {
    let mutants = MutationGenerator.mutants(of: Self.source)
    #expect(
      Self.describe(mutants) == [
        "8 delete",  // self.limit = limit (an initializer's body is code too)
        "13 `<` → `>=`",  // the only statement of a Bool function stays, its operator flips
        "18 delete",  // the log call; its string's `<` and `true` are not code
        "19 delete lines 19-21",  // the whole `if`
        "19 `>=` → `<`",
        "20 delete",
        "22 delete",  // `unused` is never read again (`kept` is, in an interpolation)
        "24 delete",
        "25 delete lines 25-27",  // a call with a trailing closure, as one statement
        "26 delete",
      ])
  }

  @Test func leavesOutWhatCannotCompile() {
    let source = """
      func pick(_ flag: Bool) -> Int {
        guard flag else {
          print("no")
          return 0
        }
        switch flag {
        case true:
          return 1
        case false:
          print("two")
          return 2
        }
      }
      """
    // Kept: the whole `guard`, the `print` in its else (not its `return`), the `print`
    // under `case false`; the `return`s under `case false` and in the else are last, the
    // one under `case true` alone, and the `switch` ends a function that returns a value.
    #expect(
      Self.describe(MutationGenerator.mutants(of: source)) == [
        "2 delete lines 2-5", "3 delete", "7 `true` → `false`", "9 `false` → `true`", "10 delete",
        "11 delete",
      ])
  }

  @Test func skipsGenericsArrowsRangesAndIdentity() {
    let source = """
      func f(_ a: [Int], _ b: Result<Int, Error>, _ c: AnyObject, _ d: AnyObject) -> Bool {
        let r = 0..<a.count
        print(r, c === d, a.count<2, a.count > 1)
        return a.isEmpty == false
      }
      """
    #expect(
      Self.describe(MutationGenerator.mutants(of: source)) == [
        "3 delete", "3 `>` → `<=`", "4 `==` → `!=`", "4 `false` → `true`",
      ])
  }

  @Test func leavesGivenLegacyCodeAlone() {
    let source = """
      // MARK: - The legacy client (read it, leave it as it is)
      final class Legacy {
        func go(_ a: Int) {
          if a > 1 { tick() }
        }
      }

      // MARK: - The function you write
      func f(_ a: Int) {
        if a > 1 { tick() }
      }
      """
    #expect(
      Self.describe(MutationGenerator.mutants(of: source)) == ["10 delete", "10 `>` → `<=`"])
  }

  @Test func appliesADeletionAndAFlip() throws {
    let mutants = MutationGenerator.mutants(of: Self.source)
    let deletion = try #require(mutants.first { $0.summary == "delete lines 19-21" })
    let mutated = deletion.apply(to: Self.source)
    #expect(!mutated.contains("if value >= limit"))
    #expect(
      mutated.components(separatedBy: "\n").count == Self.source.components(separatedBy: "\n").count
        - 3)
    let flip = try #require(mutants.first { $0.summary == "`<` → `>=`" })
    #expect(flip.apply(to: Self.source).contains("    value >= limit\n"))
    #expect(flip.apply(to: Self.source).contains("a < b is true"))
  }

  @Test func idsSurviveEditsElsewhereAndNumberRepeats() {
    let before = MutationGenerator.mutants(of: Self.source)
    let edited = Self.source.replacingOccurrences(
      of: "/// A counter.", with: "/// A counter.\n/// With a longer comment.\nlet spare = 1\n")
    let after = MutationGenerator.mutants(of: edited)
    #expect(before.map(\.id) == after.map(\.id))
    #expect(before.map(\.line).map { $0 + 3 } == after.map(\.line))
    #expect(before.first?.id.hasSuffix(":delete") == true)
    #expect(before.contains { $0.id.hasSuffix(":flip:<") })
    // Two identical statements: the second one's id is numbered.
    let twice = "func f() {\n  tick()\n  tick()\n}\n"
    let ids = MutationGenerator.mutants(of: twice).map(\.id)
    #expect(ids.count == 2 && ids[1] == ids[0] + "#2")
  }

  // MARK: the report

  static let report = MutationReport(sections: [
    MutationReport.Section(
      exerciseID: "1.2", name: "Result callback",
      solution: "Solutions/01-Callbacks/02-ResultCallback.swift",
      digest: "fnv1a64:0000000000000001",
      graded: "2 mutants: 1 killed (1 never resumed), 0 not compiled, 1 equivalent, 0 survivors",
      entries: [
        MutationReport.Entry(
          id: "3f2a91c0:delete", line: 19, description: "delete: `cache = nil`",
          reason: "the cache is rebuilt on the next call")
      ]),
    MutationReport.Section(
      exerciseID: "1.10", name: "Later", solution: "Solutions/01-Callbacks/10-Later.swift",
      digest: "fnv1a64:0000000000000002", graded: "1 mutant: 0 killed, …",
      entries: [
        MutationReport.Entry(
          id: "0badf00d:flip:==", line: 7, description: "`==` → `!=`: `if a == b {`",
          reason: nil)
      ]),
  ])

  @Test func theReportReadsBackWhatItWrote() {
    let text = Self.report.rendered()
    #expect(MutationReport.parse(text) == Self.report)
    #expect(MutationReport.parse(text).rendered() == text)
    #expect(
      text.contains(
        "- `0badf00d:flip:==` line 7, `==` → `!=`: `if a == b {`\n  reason: UNEXPLAINED\n"))
    #expect(Self.report.explained("1.2") == ["3f2a91c0:delete"])
    #expect(Self.report.explained("1.10").isEmpty)
    // A reason wrapped by hand over two lines is read as one.
    let wrapped = text.replacingOccurrences(
      of: "  reason: the cache is rebuilt on the next call",
      with: "  reason: the cache is rebuilt\n    on the next call")
    #expect(MutationReport.parse(wrapped) == Self.report)
  }

  /// A four-mutant solution of exercise 1.1 and its mutants.
  static let tallySource =
    "func f(_ a: Int) {\n  one(a)\n  two(a)\n  if a == 1 { three() }\n}\n"

  /// A tally of ``tallySource``'s mutants, grading `graded` of them.
  static func tally(graded: [Int], explained: [Int]) -> MutationTally {
    let mutants = MutationGenerator.mutants(of: tallySource)
    let chapter = Chapter(
      number: 1, folder: "01-Callbacks", module: "Callbacks", title: "Callbacks", exercises: [])
    let exercise = Exercise(
      id: "1.1", name: "Warm-up", file: "01-WarmUp.swift", suite: "WarmUpTests")
    return MutationTally(
      chapter: chapter, exercise: exercise, solution: "Solutions/01-Callbacks/01-WarmUp.swift",
      digest: Digest.of(string: tallySource), mutants: mutants,
      graded: graded.map { mutants[$0] }, explained: Set(explained.map { mutants[$0].id }))
  }

  @Test func recordingKeepsReasonsAndMarksNewSurvivors() throws {
    let mutants = MutationGenerator.mutants(of: Self.tallySource)
    #expect(mutants.count == 4)
    var tally = Self.tally(graded: [0, 1, 2], explained: [1])
    tally.outcomes = [
      mutants[0].id: .survived, mutants[1].id: .survived, mutants[2].id: .notCompiled,
    ]
    var report = MutationReport(sections: [
      MutationReport.Section(
        exerciseID: "1.1", name: "Warm-up", solution: tally.solution, digest: "old",
        graded: "old",
        entries: [
          MutationReport.Entry(id: mutants[1].id, line: 1, description: "x", reason: "same"),
          MutationReport.Entry(id: mutants[3].id, line: 1, description: "x", reason: "kept"),
          MutationReport.Entry(id: "gone:delete", line: 9, description: "x", reason: "old"),
        ])
    ])
    report.record(tally)
    let section = try #require(report.sections.first)
    #expect(section.digest == tally.digest)
    #expect(
      section.graded.hasPrefix("3 mutants: 0 killed, 1 not compiled, 1 equivalent, 1 survivor"))
    #expect(section.entries.map(\.id) == [mutants[0].id, mutants[1].id, mutants[3].id])
    #expect(section.entries.map(\.reason) == [nil, "same", "kept"])
    #expect(section.entries[0].description == "delete: `one(a)`")
  }

  @Test func regradingSurvivorsUpdatesTheEarlierCounts() throws {
    let mutants = MutationGenerator.mutants(of: Self.tallySource)
    // Earlier: one killed, three survivors, of which this run grades two again.
    var tally = Self.tally(graded: [1, 2], explained: [3])
    tally.earlierCounts =
      "4 mutants: 1 killed (1 failed), 0 not compiled, 1 equivalent, 2 survivors"
    tally.outcomes = [mutants[1].id: .killed(.neverResumed), mutants[2].id: .survived]
    #expect(
      tally.counts
        == "4 mutants: 2 killed (1 failed, 1 never resumed), 0 not compiled, 1 equivalent, "
        + "1 survivor" + MutationTally.regradedNote)
    #expect(MutationTally.total(in: tally.counts) == 4)
    // With no unexplained survivor, nothing is graded again: the same counts, the ones
    // explained since counted as equivalent, and no note.
    let earlier = tally.earlierCounts
    tally.graded = []
    tally.earlierCounts =
      "4 mutants: 1 killed (1 failed), 0 not compiled, 1 equivalent, 2 survivors"
    #expect(
      tally.counts == "4 mutants: 1 killed (1 failed), 0 not compiled, 3 equivalent, 0 survivors")
    tally.earlierCounts = earlier
    tally.graded = [mutants[1], mutants[2]]
    // Graded again, the note is not repeated.
    tally.earlierCounts = tally.counts
    tally.graded = [mutants[2]]
    tally.outcomes = [mutants[2].id: .killed(.failed)]
    #expect(
      tally.counts
        == "4 mutants: 3 killed (2 failed, 1 never resumed), 0 not compiled, 1 equivalent, "
        + "0 survivors" + MutationTally.regradedNote)
  }

  @Test func aSectionIsStaleWhenItsSolutionChanged() throws {
    let root = try Fixtures.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: root) }
    let manager = FileManager.default
    try manager.createDirectory(
      at: root.appendingPathComponent("Solutions/01-Callbacks"), withIntermediateDirectories: true)
    try manager.createDirectory(
      at: root.appendingPathComponent("Mistakes"), withIntermediateDirectories: true)
    #expect(MutationReport.staleExercises(root: root).isEmpty)  // no report yet
    let solution = "func f() {}\n"
    try solution.write(
      to: root.appendingPathComponent("Solutions/01-Callbacks/01-WarmUp.swift"), atomically: true,
      encoding: .utf8)
    var report = Self.report
    report.sections[0].solution = "Solutions/01-Callbacks/01-WarmUp.swift"
    report.sections[0].digest = Digest.of(string: solution)
    try report.write(root: root)
    #expect(MutationReport.staleExercises(root: root) == ["1.10"])  // its file is missing
    try "func f() { g() }\n".write(
      to: root.appendingPathComponent("Solutions/01-Callbacks/01-WarmUp.swift"), atomically: true,
      encoding: .utf8)
    #expect(MutationReport.staleExercises(root: root) == ["1.2", "1.10"])
  }

  // MARK: the command line

  @Test func parsesTheMutateOptions() throws {
    let invocation = try ArgumentParser.parse([
      "mutate", "--exercise", "1.2", "--limit", "5", "--write-report", "--timeout", "9",
    ])
    #expect(invocation.command == .mutate)
    #expect(invocation.exercise == "1.2")
    #expect(invocation.limit == 5)
    #expect(invocation.writeReport)
    #expect(invocation.timeout == 9)
    #expect(throws: WorkbookError.self) { try ArgumentParser.parse(["mutate", "--limit", "0"]) }
    #expect(throws: WorkbookError.self) { try ArgumentParser.parse(["mutate", "--only", "x"]) }
  }
}

/// Which exercises use another's code, read from the solutions and tests of a chapter.
@Suite struct MutationDependenciesTests {
  @Test func anExerciseUsesTheTopLevelNamesOfAnother() throws {
    let root = try Fixtures.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: root) }
    let files = [
      "Solutions/08-Capstone/01-Connect.swift":
        "public func connect() {}\nprivate func helper() {}\nstruct Link {\n  var state = 0\n}\n",
      "Solutions/08-Capstone/02-Clipper.swift": "func clip() {\n  connect()\n  helper()\n}\n",
      "Solutions/08-Capstone/03-Other.swift": "func other() {\n  let state = 1\n}\n",
      "Tests/08-CapstoneTests/01-ConnectTests.swift": "",
      "Tests/08-CapstoneTests/02-ClipperTests.swift": "",
      "Tests/08-CapstoneTests/03-OtherTests.swift": "// Link\n_ = Link()\n",
    ]
    for (path, text) in files {
      let url = root.appendingPathComponent(path)
      try FileManager.default.createDirectory(
        at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
      try text.write(to: url, atomically: true, encoding: .utf8)
    }
    func exercise(_ id: String, _ file: String) -> Exercise {
      Exercise(
        id: id, name: id, file: file, suite: "S", starterVerdict: "failed", starterDigest: "",
        hints: [])
    }
    let chapter = Chapter(
      number: 8, folder: "08-Capstone", module: "Capstone", title: "Capstone",
      exercises: [
        exercise("8.1", "01-Connect.swift"), exercise("8.2", "02-Clipper.swift"),
        exercise("8.3", "03-Other.swift"),
      ])
    let dependencies = MutationDependencies(chapter: chapter, root: root)
    #expect(dependencies.does("8.2", use: "8.1"))  // calls connect()
    #expect(dependencies.does("8.3", use: "8.1"))  // its tests make a Link
    #expect(!dependencies.does("8.1", use: "8.2"))
    #expect(!dependencies.does("8.2", use: "8.3"))
  }
}
