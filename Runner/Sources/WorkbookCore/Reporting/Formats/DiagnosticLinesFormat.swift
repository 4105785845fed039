import Foundation

/// `check --format diagnostics`: each finding of an exercise that did not pass as one line
/// in the compiler's own format, `/ABSOLUTE/PATH.swift:LINE:COL: error: …`, pointing into the
/// learner's file, so that an editor lists it where the learner works (VS Code's `$swiftc`
/// problem matcher, Xcode's build log).
///
/// - The compiler's errors, as they are, with absolute paths.
/// - Any other verdict, at the function the verdict names (its declaration in the graded
///   file), or at the line a crash names; else at the file's `TODO`, else at its first line.
/// - "not started" as a `note:` at the `TODO`.
/// - The notes a passing answer earned, at the construct that earned them, one line per line
///   where it appears: a caution as a `warning:`, listed with the compiler's warnings; a
///   celebratory note as a `note:`, an editor's information. None of them fails the check.
public enum DiagnosticLinesFormat {
  /// The lines of every exercise of `report` that did not pass, and the notes of those that
  /// did, newline-separated.
  /// `contents(path)` reads a file relative to `root` (the tests give their own).
  public static func render(
    _ report: CheckReport, root: URL,
    contents: (String) -> String? = { path in try? String(contentsOfFile: path, encoding: .utf8) }
  ) -> String {
    report.chapters.flatMap { chapter in
      chapter.exercises.flatMap { exercise in
        lines(for: exercise, root: root, source: contents(absolute(exercise.file, root: root)))
      }
    }.joined(separator: "\n")
  }

  /// The lines for one exercise; `source` is its graded file's text, when it can be read.
  static func lines(for exercise: ExerciseReport, root: URL, source: String?) -> [String] {
    let file = absolute(exercise.file, root: root)
    let title = "\(exercise.id) \(exercise.name)"
    switch exercise.verdict {
    case .passed:
      return exercise.notes.flatMap { note in
        note.lines.map { line in
          let column = line == note.line ? note.column : 1
          let severity = note.type.isCaution ? "warning" : "note"
          return "\(file):\(line):\(column): \(severity): \(title): \(note.type.rawValue) note: "
            + note.message
        }
      }
    case .notStarted:
      let line = source.flatMap { firstLine(in: $0, containing: "TODO") } ?? 1
      return ["\(file):\(line):1: note: \(title): not started; do the TODO on this line"]
    case .doesNotCompile:
      let errors = exercise.details.compactMap { compilerLine($0, root: root) }
      if !errors.isEmpty { return errors }
      return [
        "\(file):1:1: error: \(title): does not compile: "
          + summary(exercise.details)
      ]
    case .failed, .neverResumed, .crashed:
      let (line, column) = place(of: exercise, in: source)
      return [
        "\(file):\(line):\(column): error: \(title): \(exercise.verdict.rawValue): "
          + summary(exercise.details)
      ]
    }
  }

  /// A compiler diagnostic line of the details (`path:line:col: error: …`), with its path
  /// made absolute; `nil` for any other line.
  static func compilerLine(_ detail: String, root: URL) -> String? {
    let pattern = /^(\S[^:]*\.swift):(\d+):(\d+): (error|warning|note): (.+)$/
    guard let match = detail.wholeMatch(of: pattern) else { return nil }
    let path = absolute(String(match.1), root: root)
    return "\(path):\(match.2):\(match.3): \(match.4): \(match.5)"
  }

  /// Where a verdict points in the graded file: the line a detail names (`file:LINE`), else
  /// the declaration of a function a detail names, else the `TODO`, else the first line.
  static func place(of exercise: ExerciseReport, in source: String?) -> (Int, Int) {
    let text = exercise.details.joined(separator: "\n")
    let fileName = NSRegularExpression.escapedPattern(for: exercise.file)
    if let regex = try? NSRegularExpression(pattern: fileName + #":(\d+)"#),
      let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
      let range = Range(match.range(at: 1), in: text), let line = Int(text[range])
    {
      return (line, 1)
    }
    guard let source else { return (1, 1) }
    for name in functionNames(in: text) {
      if let found = declaration(of: name, in: source) { return found }
    }
    return (firstLine(in: source, containing: "TODO") ?? 1, 1)
  }

  /// The names of functions the details mention, first mentioned first: `classify` for
  /// "classify(_:using:)", `refresh` for "StepsViewModel.refresh()".
  static func functionNames(in text: String) -> [String] {
    var names: [String] = []
    for match in text.matches(of: /([A-Za-z_][A-Za-z0-9_]*)\(/) {
      let name = String(match.1)
      // Words before a parenthesis in prose, and closures, are not declarations.
      if ["closure", "in", "at", "see", "e.g", "init"].contains(name) { continue }
      if !names.contains(name) { names.append(name) }
    }
    return names
  }

  /// The line and column of `func name` (or `var name`) in `source`, when it declares one.
  static func declaration(of name: String, in source: String) -> (Int, Int)? {
    let escaped = NSRegularExpression.escapedPattern(for: name)
    guard let regex = try? NSRegularExpression(pattern: #"\b(func|var)\s+"# + escaped + #"\b"#)
    else { return nil }
    for (index, line) in source.split(separator: "\n", omittingEmptySubsequences: false)
      .enumerated()
    {
      let text = String(line)
      if text.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
      if let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
        let range = Range(match.range, in: text)
      {
        return (index + 1, text.distance(from: text.startIndex, to: range.lowerBound) + 1)
      }
    }
    return nil
  }

  /// The number of the first line of `source` that contains `text`.
  static func firstLine(in source: String, containing text: String) -> Int? {
    source.split(separator: "\n", omittingEmptySubsequences: false)
      .firstIndex { $0.contains(text) }
      .map { $0 + 1 }
  }

  /// The verdict's explanation on one line: its details but the ones that only say where a
  /// test is, joined.
  static func summary(_ details: [String]) -> String {
    let said = details.filter {
      !$0.hasPrefix("test \"") && !$0.hasPrefix("while running ") && !$0.hasPrefix("  ")
    }
    let text = (said.isEmpty ? details : said).prefix(3).joined(separator: " ")
    return text.replacingOccurrences(of: "\n", with: " ")
  }

  static func absolute(_ path: String, root: URL) -> String {
    path.hasPrefix("/") ? path : root.appendingPathComponent(path).path
  }
}
