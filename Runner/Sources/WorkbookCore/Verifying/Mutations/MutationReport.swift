import Foundation

/// `Mistakes/MUTATION.md`: per exercise graded by `workbook mutate --write-report`, the
/// solution's digest at that run, its counts, and every mutant that survived, each either
/// explained (`reason:` why it changes nothing the tests could observe: an equivalent
/// mutant) or `UNEXPLAINED` (a gap in the tests, or an explanation still owed).
///
/// `workbook mutate` reads it to count the explained survivors as equivalent; a rewrite
/// keeps every reason and the sections of exercises not graded. The format is Markdown a
/// maintainer edits by hand (replacing `UNEXPLAINED` with a reason), read back line by line:
///
///     ## 1.2 Result callback
///
///     - solution: `Solutions/01-Callbacks/02-ResultCallback.swift`
///     - digest: `fnv1a64:…`
///     - graded: 2 mutants: 2 killed, 0 not compiled, 0 equivalent, 0 survivors
///
///     - `3f2a91c0:delete` line 19, delete: `continuation.resume(with: result)`
///       reason: UNEXPLAINED
public struct MutationReport: Sendable, Equatable {
  public static let path = "Mistakes/MUTATION.md"
  public static let unexplained = "UNEXPLAINED"

  /// A mutant that survived; `reason` is `nil` while unexplained.
  public struct Entry: Sendable, Equatable {
    public var id: String
    public var line: Int
    /// "delete: `code`", "`==` → `!=`: `code`".
    public var description: String
    public var reason: String?

    public init(id: String, line: Int, description: String, reason: String?) {
      self.id = id
      self.line = line
      self.description = description
      self.reason = reason
    }
  }

  public struct Section: Sendable, Equatable {
    public var exerciseID: String
    public var name: String
    public var solution: String
    public var digest: String
    /// The counts line of the run that wrote it.
    public var graded: String
    public var entries: [Entry]

    public init(
      exerciseID: String, name: String, solution: String, digest: String, graded: String,
      entries: [Entry]
    ) {
      self.exerciseID = exerciseID
      self.name = name
      self.solution = solution
      self.digest = digest
      self.graded = graded
      self.entries = entries
    }
  }

  /// The text before the first section, kept as written.
  public var preamble: String
  public var sections: [Section]

  public init(preamble: String = MutationReport.defaultPreamble, sections: [Section] = []) {
    self.preamble = preamble
    self.sections = sections
  }

  public static let defaultPreamble = """
    # Mutation report

    `make mutate` (`workbook mutate`) deletes each statement of a solution and flips each
    comparison and boolean literal, one at a time, and grades every such mutant with the
    exercise's tests. A mutant the tests let pass is a survivor: either the change is
    equivalent (nothing observable differs; its `reason:` says why) or the tests miss
    something (`UNEXPLAINED` until the tests catch it or a reason is written).

    `workbook mutate --write-report` rewrites the sections of the exercises it graded,
    keeping every reason; `workbook mutate` counts the explained survivors as equivalent and
    exits with status 1 while any survivor is unexplained. An id is a hash of the mutated
    line (or statement) and the mutation, so it survives edits elsewhere in the file; the
    line number is only a guide. A section whose digest differs from the solution's is stale.

    Code under a `// MARK:` that says "leave it as it is" is not mutated, up to the next
    `// MARK:`: it is legacy code an exercise gives the learner to read, and no test grades it.
    `workbook mutate --survivors` grades again only the unexplained survivors of each section
    whose solution and mutants are unchanged (the others in full) and updates its counts; such
    a counts line ends "(its survivors graded again by --survivors)".

    """

  /// The ids explained as equivalent for an exercise.
  public func explained(_ exerciseID: String) -> Set<String> {
    let entries = sections.first { $0.exerciseID == exerciseID }?.entries ?? []
    return Set(entries.filter { $0.reason != nil }.map(\.id))
  }

  // MARK: reading and writing

  public static func parse(_ text: String) -> MutationReport {
    var preamble = ""
    var sections: [Section] = []
    let entryPattern = #/^- `([^`]+)` line (\d+), (.*)$/#
    let fieldPattern = #/^- (solution|digest|graded): (.*)$/#
    for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
      let line = String(rawLine)
      if line.hasPrefix("## ") {
        let title = line.dropFirst(3).trimmingCharacters(in: .whitespaces)
        let id = String(title.prefix { !$0.isWhitespace })
        let name = title.dropFirst(id.count).trimmingCharacters(in: .whitespaces)
        sections.append(
          Section(exerciseID: id, name: name, solution: "", digest: "", graded: "", entries: []))
        continue
      }
      guard let last = sections.indices.last else {
        preamble += line + "\n"
        continue
      }
      if let match = try? entryPattern.wholeMatch(in: line) {
        sections[last].entries.append(
          Entry(
            id: String(match.output.1), line: Int(match.output.2) ?? 0,
            description: String(match.output.3), reason: nil))
      } else if let match = try? fieldPattern.wholeMatch(in: line) {
        let value = String(match.output.2)
        switch match.output.1 {
        case "solution": sections[last].solution = unquoted(value)
        case "digest": sections[last].digest = unquoted(value)
        default: sections[last].graded = value
        }
      } else if line.hasPrefix("  "), let entry = sections[last].entries.indices.last {
        // The reason, possibly wrapped over further indented lines.
        var text = line.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("reason:") {
          text = text.dropFirst(7).trimmingCharacters(in: .whitespaces)
        }
        let joined = [sections[last].entries[entry].reason, text].compactMap { $0 }.joined(
          separator: " ")
        sections[last].entries[entry].reason = joined == unexplained ? nil : joined
      }
    }
    // One newline ends the preamble however many blank lines followed it, so that reading
    // what ``rendered()`` wrote gives the same report back.
    let trimmed = preamble.replacing(#/\s+$/#, with: "")
    return MutationReport(
      preamble: trimmed.isEmpty ? defaultPreamble : trimmed + "\n", sections: sections)
  }

  public func rendered() -> String {
    var text = preamble
    for section in sections {
      if !text.hasSuffix("\n\n") { text += "\n" }
      text += "## \(section.exerciseID) \(section.name)\n\n"
      text += "- solution: `\(section.solution)`\n"
      text += "- digest: `\(section.digest)`\n"
      text += "- graded: \(section.graded)\n"
      if !section.entries.isEmpty { text += "\n" }
      for entry in section.entries {
        text += "- `\(entry.id)` line \(entry.line), \(entry.description)\n"
        text += "  reason: \(entry.reason ?? Self.unexplained)\n"
      }
    }
    return text
  }

  static func unquoted(_ value: String) -> String {
    value.trimmingCharacters(in: CharacterSet(charactersIn: "` "))
  }

  /// The committed report under `root`; an empty one when there is none yet.
  public static func load(root: URL) throws(WorkbookError) -> MutationReport {
    let url = root.appendingPathComponent(path)
    guard FileManager.default.fileExists(atPath: url.path) else { return MutationReport() }
    guard let text = try? String(contentsOf: url, encoding: .utf8) else {
      throw .failure("cannot read \(path)")
    }
    return parse(text)
  }

  public func write(root: URL) throws(WorkbookError) {
    let url = root.appendingPathComponent(Self.path)
    do {
      try Data(rendered().utf8).write(to: url, options: .atomic)
    } catch {
      throw .failure("cannot write \(Self.path): \(error.localizedDescription)")
    }
  }

  // MARK: updating

  /// Replaces the exercise's section with this run's: its digest and counts, and one entry
  /// per survivor with the reason it had (or `UNEXPLAINED`). An entry for a mutant this run
  /// did not grade (`--limit`) stays while the mutant still exists; one for a mutant that is
  /// gone or was killed goes. An exercise whose solution did not pass is left as it was.
  public mutating func record(_ tally: MutationTally) {
    guard tally.baseline == nil else { return }
    let old = sections.first { $0.exerciseID == tally.exercise.id }
    let reasons = Dictionary(
      (old?.entries ?? []).map { ($0.id, $0.reason) }, uniquingKeysWith: { first, _ in first })
    var entries: [Entry] = []
    for mutant in tally.mutants {
      let outcome = tally.outcomes[mutant.id]
      guard outcome == .survived || (outcome == nil && reasons[mutant.id] != nil) else {
        continue
      }
      entries.append(
        Entry(
          id: mutant.id, line: mutant.line, description: Self.describe(mutant),
          reason: reasons[mutant.id] ?? nil))
    }
    let section = Section(
      exerciseID: tally.exercise.id, name: tally.exercise.name, solution: tally.solution,
      digest: tally.digest, graded: tally.counts, entries: entries)
    if let index = sections.firstIndex(where: { $0.exerciseID == tally.exercise.id }) {
      sections[index] = section
    } else {
      sections.append(section)
      sections.sort { Self.order($0.exerciseID, $1.exerciseID) }
    }
  }

  /// "delete: `code`"; a backtick in the code takes a double-backtick span.
  static func describe(_ mutant: Mutant) -> String {
    let fence = mutant.original.contains("`") ? "`` " : "`"
    let closing = mutant.original.contains("`") ? " ``" : "`"
    return "\(mutant.summary): \(fence)\(mutant.original)\(closing)"
  }

  /// Exercise ids in numeric order: 1.2 before 1.10.
  static func order(_ lhs: String, _ rhs: String) -> Bool {
    let left = lhs.split(separator: ".").map { Int($0) ?? 0 }
    let right = rhs.split(separator: ".").map { Int($0) ?? 0 }
    return left.lexicographicallyPrecedes(right)
  }

  // MARK: staleness

  /// The exercises whose solution's digest is no longer the one the report was written
  /// for (or whose solution is gone): their sections need `make mutate EXERCISE=…` again.
  public static func staleExercises(root: URL) -> [String] {
    guard let report = try? load(root: root) else { return [] }
    return report.sections.filter { section in
      Digest.ofFile(root.appendingPathComponent(section.solution)) != section.digest
    }.map(\.exerciseID)
  }
}
