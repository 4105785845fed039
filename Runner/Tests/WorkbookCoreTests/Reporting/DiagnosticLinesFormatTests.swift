import Foundation
import Testing

@testable import WorkbookCore

/// `check --format diagnostics`: every verdict that is not a pass becomes a line the VS Code
/// Swift extension's `$swiftc` problem matcher reads, at the right line of the learner's file.
@Suite struct DiagnosticLinesFormatTests {
  /// The extension's matcher for `$swiftc` (its regexp, as published).
  static var matcher: Regex<(Substring, Substring, Substring, Substring?, Substring, Substring)> {
    /^(.*?):(\d+)(?::(\d+))?:\s+(warning|error|note):\s+(.*)$/
  }

  static let root = URL(fileURLWithPath: "/work/book")
  static let file = "Chapters/01-Callbacks/03-OptionalPair.swift"
  static let source = """
    import Foundation

    /// Looks a user up.
    func lookUp(_ id: Int) async -> String? {
      // TODO: bridge the callback
      nil
    }

    final class Screen {
      func refresh() async {}
    }
    """

  func report(_ verdict: Verdict, _ details: [String]) -> ExerciseReport {
    ExerciseReport(
      id: "1.3", name: "Optional pair", file: Self.file, verdict: verdict, details: details,
      hint: "make hint EXERCISE=1.3")
  }

  /// The one line for `report`, checked against the matcher; its path, line, column,
  /// severity and message.
  func parsed(_ report: ExerciseReport) throws -> (String, Int, Int, String, String) {
    let lines = DiagnosticLinesFormat.lines(for: report, root: Self.root, source: Self.source)
    try #require(lines.count == 1, "one line, got \(lines)")
    let match = try #require(lines[0].wholeMatch(of: Self.matcher), "\(lines[0])")
    return (
      String(match.1), Int(match.2)!, Int(match.3 ?? "0")!, String(match.4), String(match.5)
    )
  }

  @Test func neverResumedPointsAtTheFunctionItNames() throws {
    let (path, line, column, severity, message) = try parsed(
      report(
        .neverResumed,
        [
          "Never resumed: lookUp(_:) did not finish within 2 seconds. Likely cause: the nil "
            + "case never resumes.",
          "test \"Finds a user\" at Tests/01-CallbacksTests/03-OptionalPairTests.swift:20",
        ]))
    #expect(path == "/work/book/" + Self.file)
    #expect(line == 4 && column == 1)
    #expect(severity == "error")
    #expect(message.hasPrefix("1.3 Optional pair: never resumed: Never resumed: lookUp(_:)"))
    #expect(!message.contains("test \"Finds a user\""))
  }

  @Test func aCrashPointsAtTheMethodOfItsFrame() throws {
    let (_, line, column, severity, message) = try parsed(
      report(
        .crashed,
        [
          "the runtime stopped the tests: a closure isolated to the main actor was called on "
            + "a background thread",
          "while running ScreenTests.refreshes() at Tests/01-CallbacksTests/X.swift:9",
          "at \(Self.file) (in closure #1 in Screen.refresh())",
        ]))
    #expect(line == 10 && column == 3)
    #expect(severity == "error")
    #expect(message.contains("crashed: the runtime stopped the tests"))
  }

  @Test func aLineNamedInTheDetailsWins() throws {
    let (_, line, _, _, _) = try parsed(
      report(.crashed, ["Fatal error: Unexpectedly found nil", "at \(Self.file):6"]))
    #expect(line == 6)
  }

  @Test func aFailureThatNamesNoFunctionPointsAtTheTODO() throws {
    let (_, line, _, severity, message) = try parsed(
      report(.failed, ["Expectation failed: the count was 3, not 4"]))
    #expect(line == 5)
    #expect(severity == "error")
    #expect(message == "1.3 Optional pair: failed: Expectation failed: the count was 3, not 4")
  }

  @Test func notStartedIsANoteAtTheTODO() throws {
    let (_, line, _, severity, _) = try parsed(
      report(.notStarted, ["open \(Self.file) and find the TODO"]))
    #expect(line == 5)
    #expect(severity == "note")
  }

  @Test func compileErrorsAreTheCompilersOwnWithAbsolutePaths() throws {
    let lines = DiagnosticLinesFormat.lines(
      for: report(
        .doesNotCompile,
        [
          "\(Self.file):6:5: error: cannot convert value of type 'Int' to 'String'",
          "  6 |   nil",
          "[#MutableGlobalVariable] Unsafe mutable global and static variables: …",
          "\(Self.file):9:1: warning: var 'x' was never mutated",
        ]),
      root: Self.root, source: Self.source)
    #expect(
      lines == [
        "/work/book/\(Self.file):6:5: error: cannot convert value of type 'Int' to 'String'",
        "/work/book/\(Self.file):9:1: warning: var 'x' was never mutated",
      ])
    for line in lines { #expect(line.wholeMatch(of: Self.matcher) != nil) }
  }

  @Test func aPassIsSilentAndAnUnreadableFileFallsBackToItsFirstLine() throws {
    #expect(
      DiagnosticLinesFormat.lines(
        for: report(.passed, []), root: Self.root, source: Self.source
      ).isEmpty)
    let lines = DiagnosticLinesFormat.lines(
      for: report(.failed, ["lookUp(_:) returned nil"]), root: Self.root, source: nil)
    #expect(lines.first?.hasPrefix("/work/book/\(Self.file):1:1: error:") == true)
  }

  @Test func aPassWithNotesGetsAWarningAtEachLineThatEarnedOne() throws {
    var passed = report(.passed, [])
    passed.notes = [
      Note(
        id: "task-detached", type: .actionable, line: 4, column: 7, lines: [4, 10],
        message: "`Task.detached` takes nothing from its caller.")
    ]
    let lines = DiagnosticLinesFormat.lines(for: passed, root: Self.root, source: Self.source)
    #expect(lines.count == 2)
    let parsed = try lines.map { try #require($0.wholeMatch(of: Self.matcher), "\($0)") }
    #expect(parsed.map { String($0.1) } == ["/work/book/\(Self.file)", "/work/book/\(Self.file)"])
    #expect(parsed.map { Int($0.2)! } == [4, 10])
    #expect(parsed.map { $0.3.map(String.init) } == ["7", "1"])
    #expect(parsed.allSatisfy { $0.4 == "warning" })
    #expect(
      parsed[0].5
        == "1.3 Optional pair: actionable note: `Task.detached` takes nothing from its caller.")
    passed.notes = [
      Note(id: "mutex", type: .celebratory, line: 9, column: 3, lines: [9], message: "Good.")
    ]
    let praise = DiagnosticLinesFormat.lines(for: passed, root: Self.root, source: Self.source)
    #expect(
      praise == ["/work/book/\(Self.file):9:3: note: 1.3 Optional pair: celebratory note: Good."])
  }

  @Test func theFormatOptionIsParsed() throws {
    #expect(try ArgumentParser.parse(["check", "--format", "diagnostics"]).diagnosticLines)
    #expect(try ArgumentParser.parse(["check", "--format=json"]).json)
    #expect(throws: WorkbookError.self) { try ArgumentParser.parse(["check", "--format", "xml"]) }
  }

  /// The committed VS Code tasks that grade use this format and the `$swiftc` matcher.
  @Test func theCommittedVSCodeTasksUseThisFormat() throws {
    let root = URL(fileURLWithPath: #filePath)
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let data = try Data(contentsOf: root.appendingPathComponent(".vscode/tasks.json"))
    let tasks = try #require(
      (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["tasks"]
        as? [[String: Any]])
    let checks = tasks.filter { ($0["command"] as? String)?.contains(" check ") == true }
    #expect(checks.count == 2)
    for task in checks {
      #expect((task["command"] as? String)?.hasSuffix("--format diagnostics") == true)
      #expect(task["problemMatcher"] as? String == "$swiftc")
    }
  }
}
