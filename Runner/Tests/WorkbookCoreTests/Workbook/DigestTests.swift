import Foundation
import Testing

@testable import WorkbookCore

@Suite struct DigestTests {
  @Test func matchesTheFNV1aReferenceValues() {
    #expect(Digest.of(string: "") == "fnv1a64:cbf29ce484222325")
    #expect(Digest.of(string: "a") == "fnv1a64:af63dc4c8601ec8c")
    #expect(Digest.of(string: "foobar") == "fnv1a64:85944171f73967e8")
  }

  @Test func treatsCRLFAsLF() {
    #expect(Digest.of(string: "a\r\nb\r\n") == Digest.of(string: "a\nb\n"))
  }

  @Test func keepsALoneCarriageReturn() {
    #expect(Digest.of(string: "a\rb") != Digest.of(string: "ab"))
    #expect(Digest.of(string: "a\r") != Digest.of(string: "a"))
  }

  @Test func readsFiles() throws {
    let folder = try Fixtures.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("x.swift")
    try Data("let x = 1\r\n".utf8).write(to: file)
    #expect(Digest.ofFile(file) == Digest.of(string: "let x = 1\n"))
    #expect(Digest.ofFile(folder.appendingPathComponent("missing")) == nil)
  }
}

@Suite struct FingerprintTests {
  static let text = """
    {
      "chapters": [
        { "exercises": [
          { "id": "1.1", "starterDigest": "",
            "hints": [] },
          {
            "id":"1.2",
            "starterDigest"  :  "fnv1a64:0000000000000000"
          }
        ] }
      ]
    }
    """

  @Test func rewritesOnlyTheDigestValues() throws {
    let (text, changes) = try Fingerprint.rewrite(
      Self.text, digests: ["1.1": "fnv1a64:1111111111111111", "1.2": "fnv1a64:0000000000000000"])
    #expect(
      text
        == Self.text.replacingOccurrences(
          of: #""starterDigest": """#, with: #""starterDigest": "fnv1a64:1111111111111111""#))
    #expect(changes == [.init(exerciseID: "1.1", old: "", new: "fnv1a64:1111111111111111")])
  }

  @Test func refusesAnExerciseWithoutADigestKey() {
    #expect(throws: WorkbookError.metadata("workbook.json: no \"starterDigest\" key for 1.3")) {
      try Fingerprint.rewrite(Self.text, digests: ["1.1": "x", "1.2": "y", "1.3": "z"])
    }
  }

  @Test func refusesADigestOfAnUnknownExercise() {
    #expect(throws: WorkbookError.self) {
      try Fingerprint.rewrite(Self.text, digests: ["1.1": "x"])
    }
  }
}
