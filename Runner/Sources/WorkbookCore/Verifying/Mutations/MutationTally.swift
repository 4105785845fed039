import Foundation

/// How the tests took one mutant.
public enum MutationOutcome: Sendable, Equatable {
  /// Graded other than passed: the tests noticed.
  case killed(Verdict)
  /// The mutant did not build; it says nothing about the tests.
  case notCompiled
  /// Every test passed with the mutant in place.
  case survived
}

/// One exercise's mutation run: what was generated and graded, and how each mutant fared.
public struct MutationTally: Sendable {
  public var chapter: Chapter
  public var exercise: Exercise
  /// The solution file, relative to the root, and its digest when it was graded.
  public var solution: String
  public var digest: String
  /// Every mutant of the solution; `graded` is the first `--limit` of them.
  public var mutants: [Mutant]
  public var graded: [Mutant]
  public var outcomes: [String: MutationOutcome] = [:]
  /// Ids the committed report explains as equivalent.
  public var explained: Set<String>
  /// The unmutated solution's grade when it did not pass: then no mutant is graded.
  public var baseline: Grade?
  /// `--survivors`: the report's counts line for this solution, whose unexplained survivors
  /// are all that `graded` holds; ``counts`` then updates that line.
  public var earlierCounts: String?

  public var killed: Int { count { if case .killed = $0 { true } else { false } } }
  public var notCompiled: Int { count { $0 == .notCompiled } }
  /// Survivors the report explains.
  public var equivalent: [Mutant] {
    graded.filter { outcomes[$0.id] == .survived && explained.contains($0.id) }
  }
  /// Survivors it does not: gaps in the tests, or equivalents still to explain.
  public var survivors: [Mutant] {
    graded.filter { outcomes[$0.id] == .survived && !explained.contains($0.id) }
  }
  /// True when every graded mutant has an outcome.
  public var isFinished: Bool { baseline != nil || graded.allSatisfy { outcomes[$0.id] != nil } }

  private func count(_ matches: (MutationOutcome) -> Bool) -> Int {
    graded.filter { outcomes[$0.id].map(matches) ?? false }.count
  }

  /// How the killed ones were graded: "3 never resumed, 1 failed" (most first).
  public var kills: String {
    var byVerdict: [Verdict: Int] = [:]
    for mutant in graded {
      if case .killed(let verdict) = outcomes[mutant.id] { byVerdict[verdict, default: 0] += 1 }
    }
    return byVerdict.sorted { ($1.value, $0.key.rawValue) < ($0.value, $1.key.rawValue) }
      .map { "\($0.value) \($0.key.rawValue)" }.joined(separator: ", ")
  }

  /// "6 mutants: 4 killed (3 never resumed, 1 failed), 2 not compiled, 0 equivalent,
  /// 0 survivors".
  public var counts: String {
    if let earlierCounts, let updated = Self.update(earlierCounts, with: self) { return updated }
    let survivorCount = survivors.count
    let how = killed > 0 ? " (\(kills))" : ""
    return "\(graded.count) mutant\(graded.count == 1 ? "" : "s"): \(killed) killed\(how), "
      + "\(notCompiled) not compiled, \(equivalent.count) equivalent, "
      + "\(survivorCount) survivor\(survivorCount == 1 ? "" : "s")"
      + (graded.count < mutants.count ? " (the first \(graded.count) of \(mutants.count))" : "")
  }

  /// The number of mutants a counts line gives ("81 mutants: …").
  static func total(in counts: String) -> Int? {
    (try? #/^(\d+) mutants?:/#.prefixMatch(in: counts)).flatMap { Int($0.output.1) }
  }

  static let regradedNote = " (its survivors graded again by --survivors)"

  /// `earlier` (a full run's counts line) with the survivors this run graded again moved to
  /// killed, not compiled or still surviving; `nil` when `earlier` is not a counts line.
  static func update(_ earlier: String, with run: MutationTally) -> String? {
    let text = earlier.replacingOccurrences(of: regradedNote, with: "")
    let pattern =
      #/^(\d+) mutants?: (\d+) killed(?: \(([^)]*)\))?, (\d+) not compiled, (\d+) equivalent, (\d+) survivors?$/#
    guard let match = try? pattern.wholeMatch(in: text), let total = Int(match.output.1),
      var killed = Int(match.output.2), var notCompiled = Int(match.output.4)
    else { return nil }
    var byVerdict: [String: Int] = [:]
    for part in (match.output.3.map(String.init) ?? "").split(separator: ", ") {
      let words = part.split(separator: " ", maxSplits: 1)
      if words.count == 2, let count = Int(words[0]) {
        byVerdict[String(words[1]), default: 0] += count
      }
    }
    for mutant in run.graded {
      switch run.outcomes[mutant.id] {
      case .killed(let verdict)?:
        killed += 1
        byVerdict[verdict.rawValue, default: 0] += 1
      case .notCompiled?: notCompiled += 1
      default: break
      }
    }
    // Every survivor of the earlier run was either graded again or is explained by now.
    let survivorCount = run.survivors.count
    let equivalent = max(0, total - killed - notCompiled - survivorCount)
    // Nothing graded again: the same counts, with the survivors explained since moved to
    // equivalent, and no note.
    let note =
      run.graded.isEmpty ? (earlier.hasSuffix(regradedNote) ? regradedNote : "") : regradedNote
    let how =
      byVerdict.isEmpty
      ? ""
      : " ("
        + byVerdict.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
        .map { "\($0.value) \($0.key)" }.joined(separator: ", ") + ")"
    return "\(total) mutant\(total == 1 ? "" : "s"): \(killed) killed\(how), "
      + "\(notCompiled) not compiled, \(equivalent) equivalent, "
      + "\(survivorCount) survivor\(survivorCount == 1 ? "" : "s")" + note
  }

  /// The line printed when the exercise is done, and one line per survivor under it.
  public func lines(terminal: Terminal) -> [String] {
    let head = "  \(exercise.id)  \(exercise.name)"
    if let baseline {
      return [
        "\(head): \(terminal.paint("the solution itself is graded \(baseline.verdict.rawValue)", .red)); no mutant graded"
      ] + baseline.details.prefix(5).map { "      \($0)" }
    }
    var result = ["\(head): \(counts)"]
    for mutant in survivors {
      result.append(
        "      \(terminal.paint("survived", .yellow))  line \(mutant.line), \(mutant.summary): "
          + "\(mutant.original)  [\(mutant.id)]")
    }
    return result
  }
}
