import Foundation
import Testing

@testable import WorkbookCore

@Suite struct ForbiddenConstructsTests {
  static let constructs = [
    ForbiddenConstruct(construct: "@unchecked Sendable", why: "it hides a race"),
    ForbiddenConstruct(construct: "nonisolated(unsafe)", why: "it hides a race too"),
  ]

  func lines(_ source: String) -> [Int] {
    ForbiddenConstructScanner.uses(of: Self.constructs, in: source).map(\.line)
  }

  @Test func findsEachConstructWithItsLine() {
    let source = """
      import Foundation

      final class Box: @unchecked Sendable {
        nonisolated(unsafe) static var shared = 0
      }
      """
    let uses = ForbiddenConstructScanner.uses(of: Self.constructs, in: source)
    #expect(uses.map(\.line) == [3, 4])
    #expect(uses.map(\.construct.construct) == ["@unchecked Sendable", "nonisolated(unsafe)"])
  }

  @Test func anAllowedNarrowerConstructIsNotAUse() {
    let preconcurrency = [ForbiddenConstruct(construct: "@preconcurrency", why: "it hides")]
    let source = """
      @preconcurrency  import LegacyKit

      extension Model: @preconcurrency PickerDelegate {}
      """
    let allowed = ForbiddenConstructScanner.uses(
      of: preconcurrency, in: source, allowing: ["@preconcurrency import"])
    #expect(allowed.map(\.line) == [3], "the import is allowed, the conformance is not")
    #expect(ForbiddenConstructScanner.uses(of: preconcurrency, in: source).map(\.line) == [1, 3])
  }

  @Test(arguments: [
    "final class Box: @unchecked  Sendable {}",
    "final class Box: @unchecked\n  Sendable {}",
    "final class Box: Equatable, @unchecked Sendable {}",
    "nonisolated( unsafe ) var counter = 0",
    "nonisolated (unsafe) var counter = 0",
  ])
  func findsSpacingVariants(_ source: String) {
    #expect(lines(source).count == 1, "missed a use in: \(source)")
  }

  @Test(arguments: [
    "// final class Box: @unchecked Sendable {}",
    "/* nonisolated(unsafe) */ var counter = 0",
    "/* outer /* nested @unchecked Sendable */ still a comment */ let x = 1",
    #"let message = "do not write @unchecked Sendable""#,
    ##"let message = #"nonisolated(unsafe) "quoted" here"#"##,
    "let text = \"\"\"\n  nonisolated(unsafe)\n  \"\"\"",
    "final class Box: @unchecked SendableWrapper {}",
    "mynonisolated(unsafe)",
    "nonisolated func f() {}",
  ])
  func ignoresCommentsStringsAndOtherWords(_ source: String) {
    #expect(lines(source).isEmpty, "reported a use in: \(source)")
  }

  @Test func linesAfterAMultiLineStringStillCount() {
    let source = "let text = \"\"\"\n  one\n  two\n  \"\"\"\nnonisolated(unsafe) var x = 0\n"
    #expect(lines(source) == [5])
  }

  @Test func detailsNameTheFileTheConstructItsLinesAndWhy() {
    let source = "a: @unchecked Sendable\nb: @unchecked Sendable\n"
    let uses = ForbiddenConstructScanner.uses(of: Self.constructs, in: source)
    let details = ForbiddenConstructScanner.details(uses, file: "Chapters/09-X/01-A.swift")
    #expect(
      details == [
        "Chapters/09-X/01-A.swift uses `@unchecked Sendable` (lines 1, 2), which this chapter "
          + "does not allow: it hides a race"
      ])
  }

  @Test func aPassingGradeBecomesFailedAndACrashStaysACrash() throws {
    let root = FileManager.default.temporaryDirectory
      .appendingPathComponent("forbidden-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: root) }
    let folder = root.appendingPathComponent("Chapters/09-Net")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try "final class A: @unchecked Sendable {}\n".write(
      to: folder.appendingPathComponent("01-A.swift"), atomically: true, encoding: .utf8)
    let exercise = Exercise(id: "9.1", name: "A", file: "01-A.swift", suite: "ATests")
    var chapter = Chapter(
      number: 9, folder: "09-Net", module: "Net", title: "Net", exercises: [exercise])
    let grader = Grader(options: GraderOptions(root: root))

    #expect(grader.forbidding(chapter, exercise, Grade(.passed)) == Grade(.passed))
    chapter.forbidden = Self.constructs
    let failed = grader.forbidding(chapter, exercise, Grade(.passed))
    #expect(failed.verdict == .failed)
    #expect(failed.details.first?.contains("uses `@unchecked Sendable` (line 1)") == true)
    // A crash is the hidden race's luck: the verdict is the construct's, the crash under it.
    let crashed = grader.forbidding(chapter, exercise, Grade(.crashed, ["boom"]))
    #expect(crashed.verdict == .failed)
    #expect(crashed.details.count == 2)
    #expect(crashed.details.last == "boom")
  }

  @Test func challengesComeLastAndOnePerChapter() throws {
    var workbook = try MetadataLoader.decode(Data(MetadataTests.minimal.utf8))
    let manifest =
      #"let chapters: [(folder: String, module: String)] = [("01-Callbacks", "Callbacks")]"#
    var second = workbook.chapters[0].exercises[0]
    second.id = "1.2"
    second.suite = "SecondTests"
    workbook.chapters[0].exercises.append(second)
    workbook.chapters[0].exercises[1].challenge = true
    #expect(MetadataValidator.validateChapters(workbook, manifest: manifest).passed)

    workbook.chapters[0].exercises[1].challenge = false
    workbook.chapters[0].exercises[0].challenge = true
    #expect(
      MetadataValidator.validateChapters(workbook, manifest: manifest).problems.contains(
        "chapter 1: challenge 1.1 is not the chapter's last exercise"))

    workbook.chapters[0].exercises[1].challenge = true
    #expect(
      MetadataValidator.validateChapters(workbook, manifest: manifest).problems.contains {
        $0.contains("a chapter has at most one")
      })
  }

  @Test func decodesChallengeAndForbidden() throws {
    let text = MetadataTests.minimal
      .replacingOccurrences(
        of: #""hints": ["a", "b"]}"#, with: #""hints": ["a", "b"], "challenge": true}"#
      )
      .replacingOccurrences(
        of: #""title": "Callbacks to async","#,
        with: #""title": "Callbacks to async", "forbidden": [{"construct": "x", "why": "y"}],"#)
    let workbook = try MetadataLoader.decode(Data(text.utf8))
    #expect(workbook.exercises.first?.challenge == true)
    #expect(workbook.chapters.first?.forbidden == [ForbiddenConstruct(construct: "x", why: "y")])
    let plain = try MetadataLoader.decode(Data(MetadataTests.minimal.utf8))
    #expect(plain.exercises.first?.challenge == false)
    #expect(plain.chapters.first?.forbidden == nil)
  }
}
