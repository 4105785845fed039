import Foundation

/// One graded exercise, as printed and as encoded in `--json` output.
public struct ExerciseReport: Sendable, Equatable, Codable {
  public var id: String
  public var name: String
  /// The graded file, relative to the workbook root.
  public var file: String
  public var verdict: Verdict
  public var details: [String]
  /// What a passing answer earned (see ``NoteRule``): never a reason to fail; empty for any
  /// other verdict.
  public var notes: [Note] = []
  /// The command that shows the next hint; `null` for a passed exercise.
  public var hint: String?
  /// True for a chapter's challenge exercise (encoded only when true).
  public var challenge: Bool
  /// True when the exercise's own file is missing or does not compile, so the chapter was
  /// built without it: the next step points here before anything else of the chapter.
  /// Not encoded; its verdict and details say the same.
  public var breaksBuild = false

  public init(
    id: String, name: String, file: String, verdict: Verdict, details: [String], hint: String?,
    challenge: Bool = false
  ) {
    self.id = id
    self.name = name
    self.file = file
    self.verdict = verdict
    self.details = details
    self.hint = hint
    self.challenge = challenge
  }

  /// The name as listed: a challenge says so.
  public var displayName: String { challenge ? "\(name) (challenge)" : name }

  enum CodingKeys: String, CodingKey {
    case id, name, file, verdict, details, notes, hint, challenge
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    id = try container.decode(String.self, forKey: .id)
    name = try container.decode(String.self, forKey: .name)
    file = try container.decode(String.self, forKey: .file)
    verdict = try container.decode(Verdict.self, forKey: .verdict)
    details = try container.decode([String].self, forKey: .details)
    notes = try container.decodeIfPresent([Note].self, forKey: .notes) ?? []
    hint = try container.decodeIfPresent(String.self, forKey: .hint)
    challenge = try container.decodeIfPresent(Bool.self, forKey: .challenge) ?? false
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(id, forKey: .id)
    try container.encode(name, forKey: .name)
    try container.encode(file, forKey: .file)
    try container.encode(verdict, forKey: .verdict)
    try container.encode(details, forKey: .details)
    try container.encode(notes, forKey: .notes)
    try container.encode(hint, forKey: .hint)  // explicit null keeps the schema stable
    if challenge { try container.encode(challenge, forKey: .challenge) }
  }
}

/// One chapter's results.
public struct ChapterReport: Sendable, Equatable, Codable {
  public var number: Int
  public var title: String
  public var folder: String
  /// False when the chapter did not compile (every exercise is then "does not compile").
  public var compiled: Bool
  /// Lines about the chapter as a whole, e.g. compiler errors in no exercise's file, or
  /// an exercise not selected that the build had to leave out.
  public var notes: [String]
  public var exercises: [ExerciseReport]
  /// Exercises not selected that the build left out (their file is missing or does not
  /// compile): recorded as progress and used for the next step, never listed or encoded.
  public var leftOutElsewhere: [ExerciseReport] = []

  enum CodingKeys: String, CodingKey {
    case number, title, folder, compiled, notes, exercises
  }

  public init(
    number: Int, title: String, folder: String, compiled: Bool, notes: [String] = [],
    exercises: [ExerciseReport]
  ) {
    self.number = number
    self.title = title
    self.folder = folder
    self.compiled = compiled
    self.notes = notes
    self.exercises = exercises
  }
}

/// Counts over the exercises checked.
public struct Totals: Sendable, Equatable, Codable {
  public var checked: Int
  public var passed: Int
  public var notStarted: Int
  public var failed: Int
  public var neverResumed: Int
  public var crashed: Int
  public var doesNotCompile: Int
  /// `passed * 100 / checked`, rounded down (100 only when everything passed).
  public var percent: Int

  public init(_ exercises: [ExerciseReport]) {
    func count(_ verdict: Verdict) -> Int { exercises.filter { $0.verdict == verdict }.count }
    checked = exercises.count
    passed = count(.passed)
    notStarted = count(.notStarted)
    failed = count(.failed)
    neverResumed = count(.neverResumed)
    crashed = count(.crashed)
    doesNotCompile = count(.doesNotCompile)
    percent = checked == 0 ? 0 : passed * 100 / checked
  }
}

/// The exercise to work on next.
public struct NextStep: Sendable, Equatable, Codable {
  public var id: String
  public var name: String
  public var file: String
  public var hint: String

  public init(id: String, name: String, file: String, hint: String) {
    self.id = id
    self.name = name
    self.file = file
    self.hint = hint
  }

  init(_ exercise: ExerciseReport) {
    self.init(
      id: exercise.id, name: exercise.name, file: exercise.file,
      hint: exercise.hint ?? hintCommand(id: exercise.id))
  }
}

/// Everything `workbook check` found: the `--json` document (see Runner/README.md).
public struct CheckReport: Sendable, Equatable, Codable {
  /// "workbook-check/1": bumped only for incompatible changes.
  public var schema = "workbook-check/1"
  public var chapters: [ChapterReport]
  public var totals: Totals
  public var next: NextStep?

  public init(chapters: [ChapterReport]) {
    self.chapters = chapters
    let exercises = chapters.flatMap(\.exercises)
    totals = Totals(exercises)
    // In the first chapter with work left: a file that breaks the chapter's build comes
    // first, since it is the one stopping the others; else the first exercise not passed.
    next = chapters.lazy.compactMap { chapter in
      (chapter.exercises + chapter.leftOutElsewhere).first { $0.breaksBuild }
        ?? chapter.exercises.first { $0.verdict != .passed }
    }.first.map(NextStep.init)
  }

  public var allPassed: Bool { totals.passed == totals.checked }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(schema, forKey: .schema)
    try container.encode(chapters, forKey: .chapters)
    try container.encode(totals, forKey: .totals)
    try container.encode(next, forKey: .next)
  }

  /// Pretty-printed with sorted keys, so the output is stable.
  public func json() -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    guard let data = try? encoder.encode(self) else { return "{}" }
    return String(decoding: data, as: UTF8.self)
  }
}
