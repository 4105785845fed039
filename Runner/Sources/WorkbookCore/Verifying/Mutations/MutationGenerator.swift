import Foundation

/// Every mutant of a Swift file, in line order: each deletable statement
/// (``MutationStatements``) and each flippable comparison or boolean (``MutationFlips``),
/// with ids from ``MutationIdentity``.
///
/// Code under a `// MARK:` whose text says "leave it as it is" is not mutated, up to the
/// next `// MARK:`: it is legacy code an exercise gives the learner to read, which no test
/// grades (the tests grade the code the learner writes, under the next mark).
public enum MutationGenerator {
  /// The words of a `// MARK:` that starts code given to read, not written.
  public static let givenCodeMark = "leave it as it is"

  public static func mutants(of source: String) -> [Mutant] {
    let map = MutationSourceMap(source)
    let lines = map.lines
    let given = givenLines(lines.map(\.text))
    var unnamed: [(line: Int, order: Int, text: String, kind: String, mutant: Mutant)] = []
    for statement in MutationStatements.find(in: map) where !given.contains(statement.first) {
      let spanned = lines[statement.first...statement.last]
        .filter { !$0.trimmedCode.isEmpty }
        .map { $0.text.trimmingCharacters(in: .whitespaces) }
      let mutant = Mutant(
        id: "", line: statement.first + 1,
        change: .delete(lineCount: statement.last - statement.first + 1),
        original: lines[statement.first].text.trimmingCharacters(in: .whitespaces))
      unnamed.append((statement.first, -1, spanned.joined(separator: "\n"), "delete", mutant))
    }
    for flip in MutationFlips.find(in: map) where !given.contains(flip.line) {
      let text = lines[flip.line].text.trimmingCharacters(in: .whitespaces)
      let mutant = Mutant(
        id: "", line: flip.line + 1,
        change: .flip(from: flip.from, to: flip.to, column: flip.column), original: text)
      unnamed.append((flip.line, flip.column, text, "flip:\(flip.from)", mutant))
    }
    unnamed.sort { ($0.line, $0.order) < ($1.line, $1.order) }
    var identity = MutationIdentity()
    return unnamed.map { entry in
      var mutant = entry.mutant
      mutant.id = identity.next(text: entry.text, kind: entry.kind)
      return mutant
    }
  }

  /// The indices of the lines under a "leave it as it is" mark, up to the next mark.
  static func givenLines(_ lines: [String]) -> Set<Int> {
    var given: Set<Int> = []
    var inGiven = false
    for (index, line) in lines.enumerated() {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      if trimmed.hasPrefix("// MARK:") { inGiven = trimmed.contains(givenCodeMark) }
      if inGiven { given.insert(index) }
    }
    return given
  }
}
