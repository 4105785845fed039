/// Reveals an exercise's hints one at a time, in order.
public enum Hints {
  /// Every hint of `exercise` revealed so far, numbered, without revealing another.
  public static func revealed(
    _ exercise: Exercise, in chapter: Chapter, progress: Progress
  ) -> String {
    let hints = exercise.hints
    let title = "\(exercise.id) \(exercise.name)"
    let shown = min(progress[exercise.id].hintsShown, hints.count)
    guard shown > 0 else {
      return hints.isEmpty
        ? "\(title) has no hints yet. The solution is in \(chapter.solutionPath(exercise))."
        : "No hint for \(title) is shown yet; \(hintCommand(exercise)) shows the first."
    }
    var lines = ["Hints shown so far for \(title) (\(shown) of \(hints.count)):"]
    for (index, hint) in hints.prefix(shown).enumerated() {
      lines.append("  \(index + 1). \(hint)")
    }
    if shown < hints.count { lines.append("(\(hintCommand(exercise)) shows the next one)") }
    return lines.joined(separator: "\n")
  }

  /// The text to print for the next hint of `exercise`, updating `progress`.
  public static func reveal(
    _ exercise: Exercise, in chapter: Chapter, progress: inout Progress
  )
    -> String
  {
    let hints = exercise.hints
    let solution = chapter.solutionPath(exercise)
    let title = "\(exercise.id) \(exercise.name)"
    guard !hints.isEmpty else {
      return "\(title) has no hints yet. The solution is in \(solution)."
    }
    let shown = min(progress[exercise.id].hintsShown, hints.count)
    if shown == hints.count {
      return """
        All \(hints.count) hints for \(title) are shown. The last one:
          \(hints[hints.count - 1])
        The solution is in \(solution); compare it with \(chapter.starterPath(exercise)).
        """
    }
    progress[exercise.id].hintsShown = shown + 1
    var text = "Hint \(shown + 1) of \(hints.count) for \(title):\n  \(hints[shown])"
    if shown + 1 == hints.count {
      text += "\nThat was the last hint. The solution is in \(solution)."
    } else {
      text += "\n(\(hintCommand(exercise)) again for the next one)"
    }
    return text
  }
}
