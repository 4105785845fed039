import Foundation

/// Which exercises of a chapter use another's code (8.5 uses 8.2 to 8.4), so that a mutant
/// graded together with one in code it uses is not credited with that one's kill.
///
/// An exercise uses another when a name the other's solution declares at its top level (a
/// type, function, constant; not a `private` one) appears as a word in the exercise's
/// solution or tests: another file reaches a member through its type's name. Overcounting
/// costs only another build; missing a use could credit a mutant with another's kill.
struct MutationDependencies: Sendable {
  private let uses: [String: Set<String>]

  init(chapter: Chapter, root: URL) {
    let plan = PartialBuild(chapter: chapter, source: .solutions, root: root)
    func read(_ path: String) -> String {
      (try? String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)) ?? ""
    }
    var declared: [String: Set<String>] = [:]
    var words: [String: Set<String>] = [:]
    for exercise in chapter.exercises {
      let solution = read(chapter.solutionPath(exercise))
      declared[exercise.id] = Self.declaredNames(solution)
      let texts = [solution] + plan.testFiles(of: exercise).map(read)
      words[exercise.id] = Set(texts.flatMap(Self.words))
    }
    var uses: [String: Set<String>] = [:]
    for user in chapter.exercises {
      for used in chapter.exercises where used.id != user.id {
        if !(declared[used.id] ?? []).isDisjoint(with: words[user.id] ?? []) {
          uses[user.id, default: []].insert(used.id)
        }
      }
    }
    self.uses = uses
  }

  /// True when exercise `user` uses code of exercise `used`.
  func does(_ user: String, use used: String) -> Bool {
    uses[user]?.contains(used) ?? false
  }

  /// Names declared at the top level, except private ones.
  static func declaredNames(_ source: String) -> Set<String> {
    let map = MutationSourceMap(source)
    var names: Set<String> = []
    let keywords = "class|struct|enum|actor|protocol|func|var|let|typealias|case"
    let pattern = try? Regex<(Substring, Substring, Substring)>(
      "\\b(\(keywords))\\s+([A-Za-z_][A-Za-z0-9_]*)")
    for line in map.lines where line.scope == nil {
      guard let pattern else { break }
      let code = line.trimmedCode
      if code.hasPrefix("private ") || code.hasPrefix("fileprivate ") { continue }
      for match in code.matches(of: pattern) { names.insert(String(match.output.2)) }
    }
    return names
  }

  static func words(_ text: String) -> [String] {
    SwiftSource.codeOnly(text).split {
      !($0.isLetter || $0.isNumber || $0 == "_")
    }.map(String.init)
  }
}
