import Foundation
import Testing

@testable import WorkbookCore

@Suite struct DiagnosticsTests {
  @Test func parsesARealBuildFailure() throws {
    let diagnostics = DiagnosticsParser.parse(try Fixtures.sample("build-error.txt"))
    #expect(
      diagnostics == [
        Diagnostic(
          path: "/ROOT/Chapters/02-Broken/01-Halving.swift", line: 3, column: 3, severity: .error,
          message: "cannot find 'valu' in scope", sourceLine: "  valu / 2")
      ])
  }

  @Test func rendersTheSourceLineWithACaret() {
    let diagnostic = Diagnostic(
      path: "/x/A.swift", line: 12, column: 7, severity: .error, message: "oops",
      sourceLine: "  let x = y")
    #expect(
      diagnostic.rendered(relativePath: "Chapters/A.swift") == [
        "Chapters/A.swift:12:7: error: oops",
        "  12 |   let x = y",
        "     |       ^",
      ])
  }

  @Test func dropsRepeatsAndKeepsWarnings() {
    let output = """
      [3/9] Compiling M A.swift
      /r/A.swift:1:5: error: bad
      /r/A.swift:2:1: warning: var never mutated
      [4/9] Compiling M B.swift
      /r/A.swift:1:5: error: bad
      """
    let diagnostics = DiagnosticsParser.parse(output)
    #expect(diagnostics.map(\.message) == ["bad", "var never mutated"])
    #expect(diagnostics.map(\.severity) == [.error, .warning])
    #expect(diagnostics[0].sourceLine == nil)
    #expect(DiagnosticsParser.hasWarnings(output))
  }

  @Test func collectsErrorsWithoutALocation() {
    let output = """
      error: emit-module command failed with exit code 1 (use -v to see invocation)
      ld.lld: error: undefined symbol: foo()
      error: link command failed with exit code 1 (use -v to see invocation)
      /r/A.swift:1:5: error: located
      """
    #expect(DiagnosticsParser.unlocatedErrors(output) == ["ld.lld: error: undefined symbol: foo()"])
  }
}

@Suite struct CompileFailureTests {
  let workbook = try! MetadataLoader.load(
    root: Fixtures.folder.appendingPathComponent("MiniWorkbook"))

  func build(_ output: String) -> BuildResult {
    BuildResult(
      succeeded: false, output: output, diagnostics: DiagnosticsParser.parse(output),
      testProduct: nil)
  }

  @Test func attributesErrorsToTheExerciseWhoseFileHasThem() throws {
    let chapter = try #require(workbook.chapter(number: 2))
    let report = CompileFailure.readOnce(
      chapter: chapter, exercises: Array(chapter.exercises.prefix(2)),
      build: build(try Fixtures.sample("build-error.txt")), root: URL(fileURLWithPath: "/ROOT"),
      source: .learner)
    #expect(!report.compiled)
    #expect(report.exercises.map(\.verdict) == [.doesNotCompile, .doesNotCompile])
    #expect(report.exercises[0].breaksBuild)
    #expect(
      report.exercises[0].details == [
        "Chapters/02-Broken/01-Halving.swift:3:3: error: cannot find 'valu' in scope",
        "  3 |   valu / 2",
        "    |   ^",
      ])
    #expect(
      report.exercises[1].details == ["not graded: chapter 2 does not compile (errors in 2.1)"])
    #expect(report.exercises[1].hint == "make hint EXERCISE=2.2")
  }

  @Test func blamesTheTestFileWhenASignatureChanged() throws {
    let chapter = try #require(workbook.chapter(number: 2))
    let output = "/ROOT/Tests/02-BrokenTests/02-NegatingTests.swift:7:13: error: missing argument"
    let report = CompileFailure.readOnce(
      chapter: chapter, exercises: chapter.exercises, build: build(output),
      root: URL(fileURLWithPath: "/ROOT"), source: .learner)
    #expect(report.exercises[1].details.first?.hasPrefix("the tests for this exercise") == true)
    #expect(
      report.exercises[0].details == ["not graded: chapter 2 does not compile (errors in 2.2)"])
  }

  @Test func showsOtherErrorsUnderTheChapter() throws {
    let chapter = try #require(workbook.chapter(number: 2))
    let output =
      "ld.lld: error: undefined symbol: half(_:)\nerror: link command failed with exit code 1"
    let report = CompileFailure.readOnce(
      chapter: chapter, exercises: chapter.exercises, build: build(output),
      root: URL(fileURLWithPath: "/ROOT"), source: .learner)
    #expect(report.notes == ["the build failed:", "  ld.lld: error: undefined symbol: half(_:)"])
    #expect(
      report.exercises[0].details == [
        "not graded: chapter 2 does not compile (see the errors above)"
      ])
  }
}
