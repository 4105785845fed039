import Foundation
import Testing

@testable import WorkbookCore

@Suite struct StaleObjectsTests {
  /// A scratch folder with one module whose map names `source` and its object.
  func scratch() throws -> (scratch: URL, source: URL, object: URL) {
    let folder = try Fixtures.temporaryFolder()
    let module = folder.appendingPathComponent("debug/Basics.build")
    try FileManager.default.createDirectory(at: module, withIntermediateDirectories: true)
    let source = folder.appendingPathComponent("Doubling.swift")
    let object = module.appendingPathComponent("Doubling.swift.o")
    try "value * 2".write(to: source, atomically: true, encoding: .utf8)
    try "object".write(to: object, atomically: true, encoding: .utf8)
    let map = [source.path: ["object": object.path], "": ["swift-dependencies": "x"]]
    try JSONSerialization.data(withJSONObject: map).write(
      to: module.appendingPathComponent("output-file-map.json"))
    return (folder, source, object)
  }

  @Test func removesTheObjectOfASourceWhoseContentChanged() throws {
    let (scratch, source, object) = try scratch()
    StaleObjects.record(scratch: scratch)
    try "value + value".write(to: source, atomically: true, encoding: .utf8)
    #expect(StaleObjects.removeObjectsOfChangedSources(scratch: scratch) == [source.path])
    #expect(!FileManager.default.fileExists(atPath: object.path))
  }

  @Test func keepsObjectsOfUnchangedSourcesEvenWhenTouched() throws {
    let (scratch, source, object) = try scratch()
    StaleObjects.record(scratch: scratch)
    try "value * 2".write(to: source, atomically: true, encoding: .utf8)  // same bytes
    #expect(StaleObjects.removeObjectsOfChangedSources(scratch: scratch).isEmpty)
    #expect(FileManager.default.fileExists(atPath: object.path))
  }

  @Test func doesNothingBeforeTheFirstSuccessfulBuild() throws {
    let (scratch, source, object) = try scratch()
    try "value + value".write(to: source, atomically: true, encoding: .utf8)
    #expect(StaleObjects.removeObjectsOfChangedSources(scratch: scratch).isEmpty)
    #expect(FileManager.default.fileExists(atPath: object.path))
  }
}
