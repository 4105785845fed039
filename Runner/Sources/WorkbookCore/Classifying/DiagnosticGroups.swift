import Foundation

/// What the compiler's diagnostic groups mean, read from the toolchain's own educational
/// notes: Swift prints `[#MutableGlobalVariable]` after a message, and ships a Markdown note
/// per group (`usr/share/doc/swift/diagnostics/` in its install folder), whose title and
/// first paragraph say in plain words what the group is about.
public struct DiagnosticGroups: Sendable {
  /// One group's note: its title and first paragraph, and its page on swift.org.
  public struct Note: Sendable, Equatable {
    public var group: String
    public var title: String
    public var summary: String
    public var link: String
  }

  private let notes: [String: Note]

  /// The notes in `folder` (one `.md` file per group, titled "# Title (GroupName)").
  public init(folder: URL?) {
    var notes: [String: Note] = [:]
    let files =
      folder.flatMap { try? FileManager.default.contentsOfDirectory(atPath: $0.path) } ?? []
    for file in files where file.hasSuffix(".md") {
      guard let folder,
        let text = try? String(
          contentsOf: folder.appendingPathComponent(file), encoding: .utf8),
        let note = Self.note(text, link: Self.webPage + file.dropLast(".md".count))
      else { continue }
      notes[note.group] = note
    }
    self.notes = notes
  }

  /// Where swift.org publishes the notes (the compiler prints the same links).
  static let webPage = "https://docs.swift.org/compiler/documentation/diagnostics/"

  /// The notes of the toolchain that runs `swift`: `WORKBOOK_DIAGNOSTIC_NOTES` if set, else
  /// `share/doc/swift/diagnostics` next to the `bin` folder that holds the real `swift`.
  public static func ofToolchain() -> DiagnosticGroups {
    let environment = ProcessInfo.processInfo.environment
    if let folder = environment["WORKBOOK_DIAGNOSTIC_NOTES"] {
      return DiagnosticGroups(folder: URL(fileURLWithPath: folder))
    }
    guard let swift = ChildProcess.which("swift") else { return DiagnosticGroups(folder: nil) }
    let binary = URL(fileURLWithPath: swift).resolvingSymlinksInPath()
    let folder = binary.deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("share/doc/swift/diagnostics")
    return DiagnosticGroups(folder: folder)
  }

  /// The note for `group`, if the toolchain has one.
  public func note(for group: String) -> Note? { notes[group] }

  /// The groups named in `message` (`… [#SendingRisksDataRace]`), in order.
  public static func groups(in message: String) -> [String] {
    message.matches(of: #/\[#(?<group>[A-Za-z][A-Za-z0-9]*)\]/#).map { String($0.output.group) }
  }

  /// The lines that explain the groups of `errors`, one per group, in order of first use:
  /// "[#MutableGlobalVariable] Unsafe mutable global and static variables: …", then the
  /// note's link. Groups without a note get their link only.
  public func explanations(of diagnostics: [Diagnostic]) -> [String] {
    var seen: [String] = []
    for diagnostic in diagnostics {
      for group in Self.groups(in: diagnostic.message) where !seen.contains(group) {
        seen.append(group)
      }
    }
    return seen.flatMap { group -> [String] in
      guard let note = notes[group] else { return [] }
      return ["[#\(group)] \(note.title): \(note.summary)", "  more: \(note.link)"]
    }
  }

  /// The groups whose errors Swift reports only once a file's types check: the ones about
  /// values that cross between tasks and actors (region-based isolation).
  public static let laterStageGroups: Set<String> = [
    "SendingRisksDataRace", "SendingClosureRisksDataRace",
  ]

  /// Whether `errors` could be hiding others: they are type-checking errors about
  /// concurrency (a group, none of the later stage's), so fixing them can reveal errors
  /// about values that cross between tasks and actors.
  public static func mayHideLaterErrors(_ errors: [Diagnostic]) -> Bool {
    let named = Set(errors.flatMap { Self.groups(in: $0.message) })
    return !named.isEmpty && named.isDisjoint(with: laterStageGroups)
  }

  /// The sentence for ``mayHideLaterErrors(_:)``.
  public static let laterErrorsNote =
    "Swift checks how values cross between tasks and actors only once the types check: "
    + "fixing these errors can reveal the next ones."

  /// A note's group, title and summary from its Markdown: "# Title (Group)", then the first
  /// paragraph of prose after the title (under "## Overview" when there is one), with
  /// Markdown links reduced to their text.
  static func note(_ markdown: String, link: String) -> Note? {
    let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    guard let heading = lines.first(where: { $0.hasPrefix("# ") }),
      let match = heading.wholeMatch(of: #/# (?<title>.+) \((?<group>[A-Za-z0-9]+)\)\s*/#)
    else { return nil }
    var paragraph: [String] = []
    var started = false
    for line in lines.drop(while: { $0 != heading }).dropFirst() {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      if trimmed.isEmpty || trimmed.hasPrefix("#") {
        if started { break }
        continue
      }
      if trimmed.hasPrefix("```") || trimmed.hasPrefix("|") {
        if started { break }
        continue
      }
      started = true
      paragraph.append(trimmed)
    }
    guard !paragraph.isEmpty else { return nil }
    let summary = paragraph.joined(separator: " ").replacing(
      #/\[(?<text>[^\]]+)\]\([^)]*\)/#, with: { $0.output.text })
    return Note(
      group: String(match.output.group), title: String(match.output.title),
      summary: summary, link: link)
  }
}
