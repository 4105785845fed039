import Foundation
import Testing

@testable import WorkbookCore

/// `workbook reset` puts the starter back as shipped and never loses the learner's version.
@Suite(.offThePool) struct StarterResetTests {
  static let starter = "func add(_ a: Int, _ b: Int) -> Int { 0 }  // TODO\n"
  static let answer = "func add(_ a: Int, _ b: Int) -> Int { a + b }\n"

  /// A one-exercise workbook in a fresh folder, its starter committed with git.
  func workbook() throws -> (root: URL, chapter: Chapter, exercise: Exercise) {
    let root = FileManager.default.temporaryDirectory
      .appendingPathComponent("starter-reset-\(UUID().uuidString)")
    let folder = root.appendingPathComponent("Chapters/01-Basics")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try Self.starter.write(
      to: folder.appendingPathComponent("01-Adding.swift"), atomically: true, encoding: .utf8)
    let exercise = Exercise(
      id: "1.1", name: "Adding", file: "01-Adding.swift", suite: "AddingTests",
      starterVerdict: "failed", starterDigest: Digest.of(string: Self.starter),
      hints: ["a", "b"])
    let chapter = Chapter(
      number: 1, folder: "01-Basics", module: "Basics", title: "Basics", exercises: [exercise])
    for arguments in [
      ["init", "-q"], ["add", "."],
      ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "starters"],
    ] {
      let outcome = try ChildProcess.run(
        try #require(ChildProcess.which("git")), ["-C", root.path] + arguments)
      try #require(outcome.succeeded, "git \(arguments): \(outcome.stderr)")
    }
    return (root, chapter, exercise)
  }

  func file(_ root: URL) -> URL {
    root.appendingPathComponent("Chapters/01-Basics/01-Adding.swift")
  }

  @Test func anEditedFileIsResetAndTheLearnersVersionKept() throws {
    let (root, chapter, exercise) = try workbook()
    try Self.answer.write(to: file(root), atomically: true, encoding: .utf8)
    let noon = Date(timeIntervalSince1970: 1_795_000_000)

    let outcome = try StarterReset.reset(exercise, in: chapter, root: root, now: noon)

    guard case .restored(let path, let backup?) = outcome else {
      Issue.record("expected a reset with a backup, got \(outcome)")
      return
    }
    #expect(path == "Chapters/01-Basics/01-Adding.swift")
    #expect(try String(contentsOf: file(root), encoding: .utf8) == Self.starter)
    #expect(backup.hasPrefix(".workbook/backups/1.1-"))
    #expect(backup.hasSuffix("-01-Adding.swift"))
    #expect(
      try String(contentsOf: root.appendingPathComponent(backup), encoding: .utf8) == Self.answer)
  }

  @Test func twoResetsInOneSecondKeepBothVersions() throws {
    let (root, chapter, exercise) = try workbook()
    let now = Date()
    var backups: [String] = []
    for version in ["// first try\n", "// second try\n"] {
      try version.write(to: file(root), atomically: true, encoding: .utf8)
      if case .restored(_, let backup?) = try StarterReset.reset(
        exercise, in: chapter, root: root, now: now)
      {
        backups.append(backup)
      }
    }
    #expect(backups.count == 2 && Set(backups).count == 2)
    let kept = try backups.map {
      try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8)
    }
    #expect(kept == ["// first try\n", "// second try\n"])
  }

  @Test func anUntouchedStarterIsLeftAlone() throws {
    let (root, chapter, exercise) = try workbook()
    let outcome = try StarterReset.reset(exercise, in: chapter, root: root)
    #expect(outcome == .unchanged(path: "Chapters/01-Basics/01-Adding.swift"))
    #expect(
      !FileManager.default.fileExists(
        atPath: root.appendingPathComponent(StarterReset.backupFolder).path))
  }

  @Test func aDeletedFileIsRestoredWithoutABackup() throws {
    let (root, chapter, exercise) = try workbook()
    try FileManager.default.removeItem(at: file(root))
    let outcome = try StarterReset.reset(exercise, in: chapter, root: root)
    #expect(outcome == .restored(path: "Chapters/01-Basics/01-Adding.swift", backup: nil))
    #expect(try String(contentsOf: file(root), encoding: .utf8) == Self.starter)
  }

  @Test func aCommittedFileThatIsNotTheStarterIsRefusedAndNothingChanges() throws {
    var (root, chapter, exercise) = try workbook()
    exercise.starterDigest = Digest.of(string: "something else\n")
    chapter.exercises = [exercise]
    try Self.answer.write(to: file(root), atomically: true, encoding: .utf8)
    #expect(throws: WorkbookError.self) {
      try StarterReset.reset(exercise, in: chapter, root: root)
    }
    #expect(try String(contentsOf: file(root), encoding: .utf8) == Self.answer)
  }

  @Test func theCommandNamesTheValidExercisesForAnUnknownOne() throws {
    #expect(try ArgumentParser.parse(["reset", "1.3"]).exercise == "1.3")
    #expect(try ArgumentParser.parse(["reset", "--exercise", "2.1"]).exercise == "2.1")
  }
}
