import Testing

@testable import WorkbookCore

@Suite struct ArgumentsTests {
  @Test func parsesCheckWithOptions() throws {
    let invocation = try ArgumentParser.parse([
      "check", "--chapter", "2", "--json", "--timeout=3", "--jobs", "1", "--root", "/w",
    ])
    #expect(invocation.command == .check)
    #expect(invocation.chapter == 2)
    #expect(invocation.json)
    #expect(invocation.timeout == 3)
    #expect(invocation.jobs == 1)
    #expect(invocation.root == "/w")
  }

  @Test func takesTheHintExerciseAsAnArgument() throws {
    #expect(try ArgumentParser.parse(["hint", "1.3"]).exercise == "1.3")
    #expect(try ArgumentParser.parse(["--root", "/w", "hint", "--exercise", "1.3"]).root == "/w")
  }

  @Test(arguments: [
    ([], "workbook: no command given"),
    (
      ["chek"],
      "workbook: unknown command 'chek'; the commands are: check, hint, reset, watch, status, verify, mistakes, fingerprint, help"
    ),
    (["check", "--chapter"], "workbook: --chapter needs a value"),
    (
      ["check", "--chapter", "one"],
      "workbook: --chapter expects a chapter number, e.g. --chapter 1; got 'one'"
    ),
    (
      ["check", "--chapter", "1.1"],
      "workbook: --chapter expects a chapter number, e.g. --chapter 1; got '1.1'. For one exercise, use --exercise 1.1"
    ),
    (
      ["check", "--chapter", "1", "--exercise", "1.1"],
      "workbook check: give --chapter or --exercise, not both"
    ),
    (
      ["check", "--timeout", "0"],
      "workbook: --timeout expects a number of seconds above 0; got '0'"
    ),
    (["check", "--jobs", "x"], "workbook: --jobs expects a whole number of at least 1; got 'x'"),
    (["check", "extra"], "workbook check: unexpected argument 'extra'"),
    (["hint"], "workbook hint: which exercise? e.g. workbook hint 1.3 (make hint EXERCISE=1.3)"),
    (
      ["fingerprint", "--json"], "workbook fingerprint: unknown option '--json'; it accepts: --root"
    ),
    (
      ["watch", "--exercise", "1.1"],
      "workbook watch: unknown option '--exercise'; it accepts: --chapter, --jobs, --root, --timeout"
    ),
  ])
  func rejectsBadCommandLinesWithExitStatus2(arguments: [String], message: String) {
    do {
      _ = try ArgumentParser.parse(arguments)
      Issue.record("expected a usage error")
    } catch {
      #expect(error.exitStatus == 2)
      #expect(error.description.hasPrefix(message))
    }
  }

  @Test func helpWinsAnywhere() throws {
    #expect(try ArgumentParser.parse(["check", "--help"]).command == .help)
    #expect(try ArgumentParser.parse(["-h"]).command == .help)
  }

  @Test func underMakeAnExerciseIdForChapterSuggestsEXERCISE() {
    #expect(
      ArgumentParser.chapterError("1.1", viaMake: true)
        == "make: CHAPTER takes a chapter number, e.g. make check CHAPTER=1; got '1.1'. "
        + "For one exercise, use EXERCISE: make check EXERCISE=1.1")
    #expect(
      ArgumentParser.chapterError("one", viaMake: true)
        == "make: CHAPTER takes a chapter number, e.g. make check CHAPTER=1; got 'one'")
  }
}
