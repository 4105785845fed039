import Foundation
import Testing

@testable import WorkbookCore

/// File paths in the text report are links (OSC 8) at a terminal, and plain text otherwise.
@Suite struct HyperlinkTests {
  static let root = URL(fileURLWithPath: "/work/book")
  static let text =
    "open Chapters/01-Callbacks/03-OptionalPair.swift and find the TODO\n"
    + "at Chapters/01-Callbacks/06-MainActorIsolation.swift:15 (in refresh())"

  @Test func pathsAreLinksToTheFilesUnderTheRoot() {
    let linked = Terminal(color: false, progress: false, hyperlinks: true)
      .linkingPaths(in: Self.text, root: Self.root)
    #expect(
      linked.contains(
        "\u{1B}]8;;file:///work/book/Chapters/01-Callbacks/03-OptionalPair.swift\u{1B}\\"
          + "Chapters/01-Callbacks/03-OptionalPair.swift\u{1B}]8;;\u{1B}\\ and find"))
    // The line number stays in the text shown, not in the file's address.
    #expect(
      linked.contains(
        "file:///work/book/Chapters/01-Callbacks/06-MainActorIsolation.swift\u{1B}\\"
          + "Chapters/01-Callbacks/06-MainActorIsolation.swift:15\u{1B}]8;;"))
    // Without the escapes, the text is unchanged.
    let visible = linked.replacing(/\x{1B}\]8;;[^\x{1B}]*\x{1B}\\/, with: "")
    #expect(visible == Self.text)
  }

  @Test func noLinksWhereTheTerminalTakesNone() {
    let plain = Terminal(color: false, progress: false)
    #expect(plain.linkingPaths(in: Self.text, root: Self.root) == Self.text)
    #expect(!Terminal.current(environment: ["TERM": "dumb"]).hyperlinks)
  }
}
