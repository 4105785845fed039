import Foundation

/// The workbook's metadata, decoded from `workbook.json`: the single source of truth for
/// chapters, exercises, their files, test suites and hints.
public struct Workbook: Codable, Sendable, Equatable {
  public var format: Int
  public var chapters: [Chapter]
  /// When present, every exercise must list at least this many mistakes and alternatives
  /// (`workbook verify` checks it); absent while the catalogue is being written.
  public var catalogue: Catalogue?
  /// The notes a passing answer can earn (see ``NoteRule``); absent for none.
  public var notes: [NoteRule]?

  public init(
    format: Int = 1, chapters: [Chapter], catalogue: Catalogue? = nil, notes: [NoteRule]? = nil
  ) {
    self.format = format
    self.chapters = chapters
    self.catalogue = catalogue
    self.notes = notes
  }

  /// Every exercise, in workbook order.
  public var exercises: [Exercise] { chapters.flatMap(\.exercises) }

  public func chapter(number: Int) -> Chapter? {
    chapters.first { $0.number == number }
  }

  public func exercise(id: String) -> Exercise? {
    exercises.first { $0.id == id }
  }

  public func chapter(containing exercise: Exercise) -> Chapter? {
    chapters.first { chapter in chapter.exercises.contains { $0.id == exercise.id } }
  }
}

/// One chapter: a module built from `Chapters/<folder>` (or `Solutions/<folder>`), tested
/// by the test target `<module>Tests` in `Tests/<folder>Tests`.
public struct Chapter: Codable, Sendable, Equatable {
  public var number: Int
  public var folder: String
  public var module: String
  public var title: String
  public var doc: String?
  public var exercises: [Exercise]
  /// Constructs that learner files of this chapter may not use (an exercise whose file uses
  /// one grades "failed"); absent for most chapters.
  public var forbidden: [ForbiddenConstruct]?
  /// True when an answer that compiles with a warning in its own file fails (Chapter 10,
  /// whose lesson is compiling cleanly in the Swift 6 mode); absent for most chapters.
  public var warningsFail: Bool?

  public init(
    number: Int, folder: String, module: String, title: String, doc: String? = nil,
    exercises: [Exercise], forbidden: [ForbiddenConstruct]? = nil, warningsFail: Bool? = nil
  ) {
    self.number = number
    self.folder = folder
    self.module = module
    self.title = title
    self.doc = doc
    self.exercises = exercises
    self.forbidden = forbidden
    self.warningsFail = warningsFail
  }

  /// The test target's name, which is also the first component of every test id.
  public var testModule: String { "\(module)Tests" }
  /// The test target's folder, relative to the workbook root.
  public var testFolder: String { "Tests/\(folder)Tests" }
}

/// One exercise: a starter file, its mirrored solution, one test suite, hints.
public struct Exercise: Codable, Sendable, Equatable {
  public var id: String
  public var name: String
  /// The file name inside the chapter folder, e.g. `03-OptionalPair.swift`.
  public var file: String
  /// The test suite's type name, e.g. `OptionalPairTests`.
  public var suite: String
  /// The verdict the untouched starter must get (checked by `workbook verify`).
  public var starterVerdict: String
  /// `fnv1a64:<16 hex>` of the shipped starter; written by `workbook fingerprint`.
  public var starterDigest: String
  public var hints: [String]
  /// The test file name inside the chapter's test folder, when it does not follow the
  /// convention `<file stem>Tests.swift`.
  public var tests: String?
  /// Realistic wrong answers and the verdict each must get (`workbook mistakes`).
  public var mistakes: [Mistake]
  /// Correct answers in another style: each must pass (`workbook mistakes`).
  public var alternatives: [Alternative]
  /// True for a chapter's challenge: realistic legacy code, the task without steps.
  public var challenge: Bool
  /// The diagnostic groups (`MutableGlobalVariable`) the starter's errors must show, for a
  /// starter whose compile error is the lesson (Chapter 10); `workbook verify` checks them.
  public var starterGroups: [String]
  /// Constructs this exercise allows although its chapter forbids a wider one: 10.5 allows
  /// `@preconcurrency import` of a library that is safe in fact, not `@preconcurrency` on a
  /// conformance.
  public var allowed: [String]
  /// Earlier exercises of the chapter whose code this one's solution or tests call (8.5 uses
  /// 8.1 to 8.4): `workbook mistakes` never varies them in the same round as this one, where
  /// a mistake in one would change the other's verdict.
  public var uses: [String]

  public init(
    id: String, name: String, file: String, suite: String, starterVerdict: String = "not started",
    starterDigest: String = "", hints: [String] = [], tests: String? = nil,
    mistakes: [Mistake] = [], alternatives: [Alternative] = [], challenge: Bool = false,
    starterGroups: [String] = [], allowed: [String] = [], uses: [String] = []
  ) {
    self.id = id
    self.name = name
    self.file = file
    self.suite = suite
    self.starterVerdict = starterVerdict
    self.starterDigest = starterDigest
    self.hints = hints
    self.tests = tests
    self.mistakes = mistakes
    self.alternatives = alternatives
    self.challenge = challenge
    self.starterGroups = starterGroups
    self.allowed = allowed
    self.uses = uses
  }

  enum CodingKeys: String, CodingKey {
    case id, name, file, suite, starterVerdict, starterDigest, hints, tests, mistakes
    case alternatives, challenge, starterGroups, allowed, uses
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    id = try container.decode(String.self, forKey: .id)
    name = try container.decode(String.self, forKey: .name)
    file = try container.decode(String.self, forKey: .file)
    suite = try container.decode(String.self, forKey: .suite)
    starterVerdict = try container.decode(String.self, forKey: .starterVerdict)
    starterDigest = try container.decode(String.self, forKey: .starterDigest)
    hints = try container.decode([String].self, forKey: .hints)
    tests = try container.decodeIfPresent(String.self, forKey: .tests)
    mistakes = try container.decodeIfPresent([Mistake].self, forKey: .mistakes) ?? []
    alternatives = try container.decodeIfPresent([Alternative].self, forKey: .alternatives) ?? []
    challenge = try container.decodeIfPresent(Bool.self, forKey: .challenge) ?? false
    starterGroups = try container.decodeIfPresent([String].self, forKey: .starterGroups) ?? []
    allowed = try container.decodeIfPresent([String].self, forKey: .allowed) ?? []
    uses = try container.decodeIfPresent([String].self, forKey: .uses) ?? []
  }

  /// The test file name: `tests` if given, else `<file stem>Tests.swift`.
  public var testFile: String {
    if let tests { return tests }
    let stem = file.hasSuffix(".swift") ? String(file.dropLast(".swift".count)) : file
    return "\(stem)Tests.swift"
  }
}

/// A realistic wrong answer: `source` (relative to the root) is a `.patch` (a unified diff
/// applied to the exercise's solution file) or a `.swift` file that replaces it; grading it
/// must give `verdict`, with `phrase` (case-insensitive) in the verdict's detail lines.
public struct Mistake: Codable, Sendable, Equatable {
  public var name: String
  public var source: String
  public var verdict: String
  public var phrase: String

  public init(name: String, source: String, verdict: String, phrase: String) {
    self.name = name
    self.source = source
    self.verdict = verdict
    self.phrase = phrase
  }

  /// The verdicts a mistake may expect.
  public static let verdicts: [Verdict] = [.failed, .neverResumed, .crashed, .doesNotCompile]
}

/// A correct answer in another style, as a `.patch` or `.swift` like a mistake: it must
/// pass, so the tests never demand one style. A noted alternative names the notes it must
/// earn (`notes`, rules' ids): it passes *with* them, and with no other caution note. Any
/// other alternative must earn no note but a celebratory one.
public struct Alternative: Codable, Sendable, Equatable {
  public var name: String
  public var source: String
  public var notes: [String]?

  public init(name: String, source: String, notes: [String]? = nil) {
    self.name = name
    self.source = source
    self.notes = notes
  }
}

/// The top-level `"catalogue"` object: the least number of mistakes and alternatives each
/// exercise must list. Without it no minimum is enforced.
public struct Catalogue: Codable, Sendable, Equatable {
  public static let defaultMinimumMistakes = 4
  public static let defaultMinimumAlternatives = 1

  public var minimumMistakes: Int
  public var minimumAlternatives: Int

  public init(
    minimumMistakes: Int = defaultMinimumMistakes,
    minimumAlternatives: Int = defaultMinimumAlternatives
  ) {
    self.minimumMistakes = minimumMistakes
    self.minimumAlternatives = minimumAlternatives
  }

  enum CodingKeys: String, CodingKey {
    case minimumMistakes, minimumAlternatives
  }

  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    minimumMistakes =
      try container.decodeIfPresent(Int.self, forKey: .minimumMistakes)
      ?? Self.defaultMinimumMistakes
    minimumAlternatives =
      try container.decodeIfPresent(Int.self, forKey: .minimumAlternatives)
      ?? Self.defaultMinimumAlternatives
  }
}

extension Chapter {
  /// The learner's file for `exercise`, relative to the workbook root.
  public func starterPath(_ exercise: Exercise) -> String { "Chapters/\(folder)/\(exercise.file)" }
  /// The solution file for `exercise`, relative to the workbook root.
  public func solutionPath(_ exercise: Exercise) -> String {
    "Solutions/\(folder)/\(exercise.file)"
  }
  /// The test file for `exercise`, relative to the workbook root.
  public func testPath(_ exercise: Exercise) -> String { "\(testFolder)/\(exercise.testFile)" }
  /// The source file graded for `exercise` when building from `source`.
  public func sourcePath(_ exercise: Exercise, source: SourceTree) -> String {
    "\(source.folder)/\(folder)/\(exercise.file)"
  }
  /// The Swift Testing filter that selects exactly this exercise's suite.
  public func filter(for exercise: Exercise) -> String {
    "^\(NSRegularExpression.escapedPattern(for: testModule))\\."
      + "\(NSRegularExpression.escapedPattern(for: exercise.suite))(/|$)"
  }
}

/// Which copy of the chapter modules a build uses.
public enum SourceTree: String, Sendable {
  /// `Chapters/`: the learner's files (the default).
  case learner
  /// `Solutions/`: the answers (`WORKBOOK_SOURCE=solutions`).
  case solutions

  public var folder: String { self == .learner ? "Chapters" : "Solutions" }
}

/// Loading `workbook.json`.
public enum MetadataLoader {
  public static let fileName = "workbook.json"

  /// Decodes `<root>/workbook.json`; errors say what is wrong in words.
  public static func load(root: URL) throws(WorkbookError) -> Workbook {
    let url = root.appendingPathComponent(fileName)
    let data: Data
    do {
      data = try Data(contentsOf: url)
    } catch {
      throw WorkbookError.metadata("cannot read \(fileName) in \(root.path)")
    }
    return try decode(data)
  }

  public static func decode(_ data: Data) throws(WorkbookError) -> Workbook {
    do {
      return try JSONDecoder().decode(Workbook.self, from: data)
    } catch let error as DecodingError {
      throw WorkbookError.metadata("\(fileName) is not valid: \(describe(error))")
    } catch {
      throw WorkbookError.metadata("\(fileName) is not valid: \(error)")
    }
  }

  static func describe(_ error: DecodingError) -> String {
    func path(_ context: DecodingError.Context) -> String {
      let parts = context.codingPath.map { key in
        key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)"
      }
      let joined = parts.joined()
      return joined.isEmpty ? "the top level" : String(joined.drop { $0 == "." })
    }
    switch error {
    case .keyNotFound(let key, let context):
      let at = context.codingPath.isEmpty ? "the top level" : path(context)
      return "missing key \"\(key.stringValue)\" in \(at)"
    case .typeMismatch(_, let context), .valueNotFound(_, let context):
      return "wrong type at \(path(context)): \(context.debugDescription)"
    case .dataCorrupted(let context):
      let underlying = (context.underlyingError as NSError?)?.userInfo["NSDebugDescription"]
      return "not JSON (\(underlying.map { "\($0)" } ?? context.debugDescription))"
    @unknown default:
      return "\(error)"
    }
  }
}

/// Errors that end a command with a message (exit status 2 for usage errors, 1 otherwise).
public enum WorkbookError: Error, Equatable, CustomStringConvertible {
  /// The command line was wrong: exit status 2.
  case usage(String)
  /// workbook.json is missing or invalid.
  case metadata(String)
  /// Something the runner needs failed (a file it cannot write, a tool it cannot start).
  case failure(String)
  /// The learner pressed Ctrl-C; the interrupt handler reports it and exits.
  case interrupted

  public var description: String {
    switch self {
    case .usage(let message), .metadata(let message), .failure(let message): message
    case .interrupted: "workbook: interrupted"
    }
  }

  public var exitStatus: Int32 {
    switch self {
    case .usage: 2
    case .interrupted: 130
    default: 1
    }
  }
}
