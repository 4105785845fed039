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
    let survivorCount = survivors.count
    let how = killed > 0 ? " (\(kills))" : ""
    return "\(graded.count) mutant\(graded.count == 1 ? "" : "s"): \(killed) killed\(how), "
      + "\(notCompiled) not compiled, \(equivalent.count) equivalent, "
      + "\(survivorCount) survivor\(survivorCount == 1 ? "" : "s")"
      + (graded.count < mutants.count ? " (the first \(graded.count) of \(mutants.count))" : "")
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
