import Foundation
import Testing

@testable import WorkbookCore

@Suite struct UnifiedDiffTests {
  static let solution = """
    /// Doubles `value`.
    public func double(_ value: Int) -> Int {
      // Twice the value.
      value * 2
    }

    /// Negates `value`.
    public func negate(_ value: Int) -> Int {
      -value
    }

    """

  static func apply(_ patch: String, to text: String = solution) throws -> String {
    try UnifiedDiff.parse(patch, name: "Mistakes/x.patch").apply(
      to: text, name: "Mistakes/x.patch")
  }

  @Test func appliesAHunk() throws {
    let patch = """
      --- a/Solutions/01-Basics/01-Doubling.swift
      +++ b/Solutions/01-Basics/01-Doubling.swift
      @@ -2,4 +2,4 @@
       public func double(_ value: Int) -> Int {
         // Twice the value.
      -  value * 2
      +  value + 2
       }

      """
    #expect(
      try Self.apply(patch)
        == Self.solution.replacingOccurrences(of: "value * 2", with: "value + 2"))
  }

  @Test func findsAHunkAtAnOffsetFromItsStatedLine() throws {
    let patch = """
      @@ -1,3 +1,3 @@
       public func negate(_ value: Int) -> Int {
      -  -value
      +  value
       }

      """
    #expect(
      try Self.apply(patch)
        == Self.solution.replacingOccurrences(of: "  -value\n", with: "  value\n"))
  }

  @Test func aHunkThatDoesNotMatchNamesThePatchTheHunkAndTheLine() throws {
    let patch = """
      @@ -2,3 +2,3 @@
       public func double(_ value: Int) -> Int {
      -  // Twice the value, rounded.
      +  // Twice.
       }

      """
    #expect(
      throws: UnifiedDiff.Failure(
        message:
          "Mistakes/x.patch: hunk 1 (@@ -2,3 +2,3 @@) does not apply: line 3 should be "
          + "`  // Twice the value, rounded.` but is `  // Twice the value.` "
          + "(and the hunk matches nowhere else in the file)")
    ) { try Self.apply(patch) }
  }

  @Test func appliesSeveralHunksAndShiftsTheLaterOnes() throws {
    let patch = """
      @@ -1,3 +1,4 @@
       /// Doubles `value`.
      +/// Wrongly.
       public func double(_ value: Int) -> Int {
         // Twice the value.
      @@ -8,3 +9,3 @@
       public func negate(_ value: Int) -> Int {
      -  -value
      +  value
       }

      """
    let expected = Self.solution
      .replacingOccurrences(
        of: "/// Doubles `value`.\n", with: "/// Doubles `value`.\n/// Wrongly.\n"
      )
      .replacingOccurrences(of: "  -value\n", with: "  value\n")
    #expect(try Self.apply(patch) == expected)
    // The second hunk of the same patch, when the first does not apply, is not reached.
    let broken = patch.replacingOccurrences(of: " /// Doubles", with: " /// Triples")
    #expect(throws: UnifiedDiff.Failure.self) { try Self.apply(broken) }
  }

  @Test func handlesNoNewlineAtEndOfFile() throws {
    let text = "let a = 1\nlet b = 2"
    let patch = """
      --- a
      +++ b
      @@ -1,2 +1,2 @@
       let a = 1
      -let b = 2
      \\ No newline at end of file
      +let b = 3

      """
    #expect(try Self.apply(patch, to: text) == "let a = 1\nlet b = 3\n")
    let back = """
      @@ -1,2 +1,2 @@
       let a = 1
      -let b = 3
      +let b = 2
      \\ No newline at end of file

      """
    #expect(try Self.apply(back, to: "let a = 1\nlet b = 3\n") == text)
    // The old side says "no newline", the file has one: not the same line.
    #expect(throws: UnifiedDiff.Failure.self) { try Self.apply(patch, to: text + "\n") }
  }

  @Test func rejectsAPatchWithoutHunksOrWithShortHunks() {
    #expect(throws: UnifiedDiff.Failure(message: "x.patch: no hunks (no line starting with @@)")) {
      try UnifiedDiff.parse("--- a\n+++ b\n", name: "x.patch")
    }
    #expect(throws: UnifiedDiff.Failure.self) {
      try UnifiedDiff.parse("@@ -1,4 +1,4 @@\n a\n-b\n+c\n", name: "x.patch")
    }
  }
}
