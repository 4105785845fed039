import Foundation

/// Every mutant of a Swift file, in line order: each deletable statement
/// (``MutationStatements``) and each flippable comparison or boolean (``MutationFlips``),
/// with ids from ``MutationIdentity``.
public enum MutationGenerator {
  public static func mutants(of source: String) -> [Mutant] {
    let map = MutationSourceMap(source)
    let lines = map.lines
    var unnamed: [(line: Int, order: Int, text: String, kind: String, mutant: Mutant)] = []
    for statement in MutationStatements.find(in: map) {
      let spanned = lines[statement.first...statement.last]
        .filter { !$0.trimmedCode.isEmpty }
        .map { $0.text.trimmingCharacters(in: .whitespaces) }
      let mutant = Mutant(
        id: "", line: statement.first + 1,
        change: .delete(lineCount: statement.last - statement.first + 1),
        original: lines[statement.first].text.trimmingCharacters(in: .whitespaces))
      unnamed.append((statement.first, -1, spanned.joined(separator: "\n"), "delete", mutant))
    }
    for flip in MutationFlips.find(in: map) {
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
}
