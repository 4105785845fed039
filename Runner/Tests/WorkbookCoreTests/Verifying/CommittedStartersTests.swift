import Foundation
import Testing

@testable import WorkbookCore

/// `verify` grades the starters as shipped: a learner's edits never count against them, and
/// `make fingerprint` is suggested only when a committed starter changed.
@Suite(.offThePool) struct CommittedStartersTests {
  static let starter = "func add(_ a: Int, _ b: Int) -> Int { 0 }  // TODO\n"

  /// A one-exercise workbook in a fresh folder, committed with git when `commit` is true.
  func workbook(commit: Bool) throws -> (root: URL, chapters: [Chapter]) {
    let root = FileManager.default.temporaryDirectory
      .appendingPathComponent("committed-starters-\(UUID().uuidString)")
    let folder = root.appendingPathComponent("Chapters/01-Basics")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try Self.starter.write(
      to: folder.appendingPathComponent("01-Adding.swift"), atomically: true, encoding: .utf8)
    let chapter = Chapter(
      number: 1, folder: "01-Basics", module: "Basics", title: "Basics",
      exercises: [
        Exercise(
          id: "1.1", name: "Adding", file: "01-Adding.swift", suite: "AddingTests",
          starterVerdict: "not started", starterDigest: Digest.of(string: Self.starter),
          hints: ["a", "b"])
      ])
    if commit {
      for arguments in [
        ["init", "-q"], ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "starters"],
      ] {
        let outcome = try ChildProcess.run(
          try #require(ChildProcess.which("git")), ["-C", root.path] + arguments)
        try #require(outcome.succeeded, "git \(arguments): \(outcome.stderr)")
      }
    }
    return (root, [chapter])
  }

  func edit(_ root: URL, _ text: String) throws {
    try text.write(
      to: root.appendingPathComponent("Chapters/01-Basics/01-Adding.swift"), atomically: true,
      encoding: .utf8)
  }

  @Test func anUntouchedStarterIsGradedWhereItIs() throws {
    let (root, chapters) = try workbook(commit: true)
    let starters = CommittedStarters.resolve(root: root, chapters: chapters)
    #expect(starters.starters["1.1"]?.origin == .workingCopy)
  }

  @Test func anEditedStarterIsReplacedByTheCommittedOne() throws {
    let (root, chapters) = try workbook(commit: true)
    try edit(root, "func add(_ a: Int, _ b: Int) -> Int { a + b }\n")
    let starter = try #require(
      CommittedStarters.resolve(root: root, chapters: chapters).starters["1.1"])
    #expect(starter.origin == .committed)
    #expect(starter.content == Data(Self.starter.utf8))
  }

  @Test func aCommittedStarterThatChangedSuggestsFingerprint() throws {
    let (root, chapters) = try workbook(commit: true)
    var changed = chapters
    changed[0].exercises[0].starterDigest = "fnv1a64:0000000000000000"
    try edit(root, "func add(_ a: Int, _ b: Int) -> Int { a + b }\n")
    let origin = CommittedStarters.resolve(root: root, chapters: changed).starters["1.1"]?.origin
    guard case .mismatch(let problem) = origin else {
      Issue.record("expected a mismatch, got \(String(describing: origin))")
      return
    }
    #expect(problem.contains("committed starter's digest"))
    #expect(problem.contains("make fingerprint"))
  }

  @Test func outsideAGitCheckoutItSaysWhatItCannotCheck() throws {
    let (root, chapters) = try workbook(commit: false)
    try edit(root, "func add(_ a: Int, _ b: Int) -> Int { a + b }\n")
    let starters = CommittedStarters.resolve(root: root, chapters: chapters)
    #expect(starters.note?.contains("cannot read the committed starters") == true)
    guard case .mismatch(let problem) = starters.starters["1.1"]?.origin else {
      Issue.record("an edited starter outside git must be reported")
      return
    }
    #expect(!problem.contains("make fingerprint"))
  }
}
