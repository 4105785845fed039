import Foundation

/// The four kinds of note, as Exercism's analyzers type their comments.
public enum NoteType: String, Codable, Sendable, CaseIterable {
  /// Must be fixed before the answer is sound, although its tests pass.
  case essential
  /// Worth changing: the answer works here, and the habit costs elsewhere.
  case actionable
  /// Worth knowing; nothing to change.
  case informative
  /// Well done: a good choice worth keeping.
  case celebratory

  /// True for the types that ask the learner to change something, or to know something
  /// the answer does not show: a reference solution or a catalogued alternative must never
  /// get one (`workbook verify`). A celebratory note may praise any answer.
  public var isCaution: Bool { self != .celebratory }
}

/// A note the runner adds to a passing answer whose file has a risky or needless construct,
/// or a good one: one entry of workbook.json's top-level `"notes"`. A note never changes the
/// verdict.
///
/// What raises it is either `constructs`, written like the forbidden constructs (their words
/// in order, any whitespace between), or a `detector` for a shape a construct cannot say
/// ("a `Task {}` inside a loop"). Comments and string literals never raise a note.
public struct NoteRule: Codable, Sendable, Equatable {
  /// Stable and unique: a noted alternative names the note it expects by it.
  public var id: String
  public var type: NoteType
  public var constructs: [String]?
  public var detector: NoteDetector?
  /// What to do and why, in one or two sentences, without handing out an answer.
  public var message: String
  /// The exercises it applies to: ids (`"3.2"`), a chapter (`"3.*"`), or `"*"` for all.
  public var exercises: [String]
  /// Exercises left out of `exercises`, in the same forms: those whose lesson the
  /// construct is.
  public var except: [String]?

  public init(
    id: String, type: NoteType, constructs: [String]? = nil, detector: NoteDetector? = nil,
    message: String, exercises: [String], except: [String]? = nil
  ) {
    self.id = id
    self.type = type
    self.constructs = constructs
    self.detector = detector
    self.message = message
    self.exercises = exercises
    self.except = except
  }

  /// Whether the rule applies to the exercise `id`.
  public func applies(to id: String) -> Bool {
    func matches(_ scope: String) -> Bool {
      if scope == "*" || scope == id { return true }
      guard scope.hasSuffix(".*") else { return false }
      return id.hasPrefix(scope.dropLast())
    }
    return exercises.contains(where: matches) && !(except ?? []).contains(where: matches)
  }

  /// Whether `scope` is a well-formed entry of `exercises` or `except`, given the ids.
  static func isValidScope(_ scope: String, ids: Set<String>) -> Bool {
    if scope == "*" || ids.contains(scope) { return true }
    guard scope.hasSuffix(".*") else { return false }
    let chapter = scope.dropLast()
    return ids.contains { $0.hasPrefix(chapter) }
  }
}

/// One note found in a learner's file.
public struct Note: Codable, Sendable, Equatable {
  /// The rule's id.
  public var id: String
  public var type: NoteType
  /// Where the construct first appears: 1-based line and column.
  public var line: Int
  public var column: Int
  /// Every line where it appears, in order.
  public var lines: [Int]
  public var message: String

  public init(id: String, type: NoteType, line: Int, column: Int, lines: [Int], message: String) {
    self.id = id
    self.type = type
    self.line = line
    self.column = column
    self.lines = lines
    self.message = message
  }

  /// `note (actionable), line 12: …`, as the text report prints it under the exercise.
  public var rendered: String {
    let at =
      lines.count > 1 ? "lines \(lines.map(String.init).joined(separator: ", "))" : "line \(line)"
    return "note (\(type.rawValue)), \(at): \(message)"
  }
}
