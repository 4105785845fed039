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
