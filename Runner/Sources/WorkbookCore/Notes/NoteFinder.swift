import Foundation

/// Finds the notes a passing answer earns: each rule that applies to its exercise and whose
/// construct or shape appears in its file's code (never in a comment or a string literal).
public enum NoteFinder {
  /// The notes for the file `source` of exercise `exerciseID`, in the order of `rules`.
  public static func notes(in source: String, exerciseID: String, rules: [NoteRule]) -> [Note] {
    let code = SwiftSource.codeOnly(source)
    return rules.filter { $0.applies(to: exerciseID) }.compactMap { rule in
      let offsets = matches(of: rule, in: code).sorted()
      guard !offsets.isEmpty else { return nil }
      let positions = offsets.map { SwiftSource.position(ofUTF16: $0, in: code) }
      var lines: [Int] = []
      for position in positions where !lines.contains(position.line) {
        lines.append(position.line)
      }
      return Note(
        id: rule.id, type: rule.type, line: positions[0].line, column: positions[0].column,
        lines: lines, message: rule.message)
    }
  }

  /// The UTF-16 offsets where `rule` matches `code`.
  static func matches(of rule: NoteRule, in code: String) -> [Int] {
    let text = CodeText(code)
    var offsets = rule.detector?.matches(in: code) ?? []
    for construct in rule.constructs ?? [] {
      offsets += text.find(SwiftSource.pattern(for: construct))
    }
    return Array(Set(offsets))
  }
}
