import Foundation
import Testing

@testable import WorkbookCore

@Suite struct DiagnosticGroupsTests {
  static let mutableGlobal = """
    # Unsafe mutable global and static variables (MutableGlobalVariable)


    ## Overview

    Mutable global and static variables can cause data races. Resolve this error by making \
    the state immutable or protecting it with a [global actor](https://example.com/actors).

    Concurrency checking prohibits mutable global and static variables.

    ```swift
    var value = 10
    ```
    """

  @Test func aNoteGivesItsTitleAndFirstParagraph() throws {
    let note = try #require(
      DiagnosticGroups.note(Self.mutableGlobal, link: "https://swift.org/x"))
    #expect(note.group == "MutableGlobalVariable")
    #expect(note.title == "Unsafe mutable global and static variables")
    #expect(
      note.summary
        == "Mutable global and static variables can cause data races. Resolve this error by "
        + "making the state immutable or protecting it with a global actor.")
  }

  @Test func aFileThatIsNoNoteIsSkipped() {
    #expect(DiagnosticGroups.note("# Diagnostics\n\nAll of them.", link: "") == nil)
  }

  @Test func groupsAreReadFromTheMessage() {
    #expect(
      DiagnosticGroups.groups(in: "sending 'x' risks causing data races [#SendingRisksDataRace]")
        == ["SendingRisksDataRace"])
    #expect(DiagnosticGroups.groups(in: "cannot find 'valu' in scope").isEmpty)
  }

  @Test func explanationsComeOncePerGroupFromTheNotesFolder() throws {
    let folder = FileManager.default.temporaryDirectory
      .appendingPathComponent("groups-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    try Self.mutableGlobal.write(
      to: folder.appendingPathComponent("mutable-global-variable.md"), atomically: true,
      encoding: .utf8)
    let groups = DiagnosticGroups(folder: folder)
    let error = Diagnostic(
      path: "/a.swift", line: 1, column: 5, severity: .error,
      message: "var 'x' is not concurrency-safe [#MutableGlobalVariable]")
    let unknown = Diagnostic(
      path: "/a.swift", line: 2, column: 1, severity: .error, message: "odd [#NoSuchGroup]")

    #expect(
      groups.explanations(of: [error, error, unknown]) == [
        "[#MutableGlobalVariable] Unsafe mutable global and static variables: Mutable global "
          + "and static variables can cause data races. Resolve this error by making the "
          + "state immutable or protecting it with a global actor.",
        "  more: https://docs.swift.org/compiler/documentation/diagnostics/"
          + "mutable-global-variable",
      ])
  }

  @Test func typeCheckingErrorsAboutConcurrencyMayHideLaterOnes() {
    func error(_ message: String) -> Diagnostic {
      Diagnostic(path: "/a.swift", line: 1, column: 1, severity: .error, message: message)
    }
    #expect(DiagnosticGroups.mayHideLaterErrors([error("x [#MutableGlobalVariable]")]))
    #expect(
      !DiagnosticGroups.mayHideLaterErrors([
        error("x [#MutableGlobalVariable]"), error("y [#SendingRisksDataRace]"),
      ]))
    #expect(!DiagnosticGroups.mayHideLaterErrors([error("cannot find 'valu' in scope")]))
  }

  @Test func theToolchainShipsTheNotesOfTheGroupsChapter10Uses() {
    // The workbook's "does not compile" explanations come from these: if a toolchain stops
    // shipping them, the chapter loses its explanations, and this says so.
    let groups = DiagnosticGroups.ofToolchain()
    for group in [
      "MutableGlobalVariable", "SendableClosureCaptures", "SendingRisksDataRace",
      "SendingClosureRisksDataRace", "ConformanceIsolation", "PreconcurrencyImport",
    ] {
      #expect(groups.note(for: group) != nil, "no educational note for [#\(group)]")
    }
  }
}
