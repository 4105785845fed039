import Foundation
import Testing

@testable import WorkbookCore

/// Paths to the committed fixtures.
enum Fixtures {
  /// Runner/Tests/Fixtures
  static let folder = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

  /// A captured sample from Fixtures/Samples (see its README).
  static func sample(_ name: String) throws -> String {
    try String(
      contentsOf: folder.appendingPathComponent("Samples").appendingPathComponent(name),
      encoding: .utf8)
  }

  /// The suite run captured as `<name>.stderr.txt` and `<name>.events.jsonl`.
  static func run(_ name: String, termination: Termination) throws -> SuiteRun {
    SuiteRun(
      outcome: ProcessOutcome(termination: termination, stderr: try sample("\(name).stderr.txt")),
      events: EventStreamParser.parse(try sample("\(name).events.jsonl")))
  }

  /// Makes `work` match `fixture`, copying only files whose content differs and removing
  /// files the fixture no longer has (build folders and .workbook are kept, so builds stay
  /// warm between runs).
  static func sync(_ fixture: URL, to work: URL) throws {
    let manager = FileManager.default
    try manager.createDirectory(at: work, withIntermediateDirectories: true)
    let wanted = files(under: fixture)
    for path in wanted {
      let source = fixture.appendingPathComponent(path)
      let target = work.appendingPathComponent(path)
      if manager.contentsEqual(atPath: source.path, andPath: target.path) { continue }
      try manager.createDirectory(
        at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
      try? manager.removeItem(at: target)
      try manager.copyItem(at: source, to: target)
    }
    for path in files(under: work) where !wanted.contains(path) {
      try manager.removeItem(at: work.appendingPathComponent(path))
    }
  }

  /// Regular files under `folder`, relative to it, skipping hidden folders and files.
  static func files(under folder: URL) -> Set<String> {
    Set(Watcher(folder: folder).snapshot().keys)
  }

  /// A fresh, empty temporary folder.
  static func temporaryFolder() throws -> URL {
    let url = FileManager.default.temporaryDirectory
      .appendingPathComponent("workbook-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }
}

/// The samples were captured in a fixture whose path was replaced by /ROOT.
func sampleContext(
  untouched: Bool = false, file: String = "Chapters/01-Basics/02-Doubling.swift",
  suite: String = "DoublingTests"
) -> GradingContext {
  GradingContext(
    root: "/ROOT", sourceFolder: "Chapters", suite: suite, testModule: "BasicsTests",
    untouchedStarter: untouched, file: file)
}

/// `stderr` without the plain progress lines a long build or grading prints when stderr is
/// not a terminal ("building chapter 1… 4/16 Compiling Basics", "grading chapter 1: …"):
/// they come only when a build happens to be slow, so tests of other messages skip them.
func withoutProgressLines(_ stderr: String) -> String {
  stderr.split(separator: "\n", omittingEmptySubsequences: false).filter {
    !$0.hasPrefix("building ") && !$0.hasPrefix("grading ")
  }.joined(separator: "\n")
}
