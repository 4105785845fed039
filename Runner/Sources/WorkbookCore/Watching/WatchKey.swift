/// A key typed while `watch` waits, and what it asks for.
enum WatchKey: Equatable, Sendable {
  /// `h`: the next hint of the exercise in focus.
  case hint
  /// `n`: move the focus to the next exercise, once this one passed.
  case next
  /// `l`: the chapter's exercises, each with its standing.
  case list
  /// `r`: grade the chapter again now.
  case recheck
  /// `x`: reset the exercise in focus to its starter (the learner's version kept).
  case reset
  /// `q`: stop watching.
  case quit

  init?(_ key: Character) {
    switch key.lowercased() {
    case "h": self = .hint
    case "n": self = .next
    case "l": self = .list
    case "r": self = .recheck
    case "x": self = .reset
    case "q": self = .quit
    default: return nil
    }
  }

  /// The line under the verdicts that lists the keys.
  static func prompt(focus: String?) -> String {
    let target = focus.map { " \($0)" } ?? ""
    return "keys: h hint\(target) · n next · l list · r re-check · x reset\(target) · q quit"
  }
}

/// Which exercise `watch` keys act on: the first of the chapter not passed yet, until the
/// learner moves on with `n`.
enum WatchFocus {
  /// The focus after a grade: `current` if the chapter still has it, else the first
  /// exercise not passed, else the last one.
  static func after(
    _ report: ChapterReport, current: String?
  ) -> String? {
    if let current, report.exercises.contains(where: { $0.id == current }) { return current }
    return report.exercises.first { $0.verdict != .passed }?.id ?? report.exercises.last?.id
  }

  /// The exercise `n` moves to: the next one not passed after `current`, else the next one;
  /// `nil` when `current` has not passed (with the reason) or is the last.
  static func next(
    after current: String, in report: ChapterReport
  ) -> (id: String?, message: String) {
    guard let index = report.exercises.firstIndex(where: { $0.id == current }) else {
      return (nil, "no exercise in focus")
    }
    let exercise = report.exercises[index]
    guard exercise.verdict == .passed else {
      return (
        nil,
        "\(exercise.id) \(exercise.name) has not passed yet (\(exercise.verdict.rawValue)); "
          + "n moves on once it has"
      )
    }
    let later = report.exercises[(index + 1)...]
    guard let target = later.first(where: { $0.verdict != .passed }) ?? later.first else {
      return (nil, "\(exercise.id) is the chapter's last exercise")
    }
    return (target.id, "now on \(target.id) \(target.name): edit \(target.file)")
  }
}
