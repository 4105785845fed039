import Foundation

/// Why an exercise was left out of its chapter's build.
public enum LeftOut: Sendable, Equatable {
  /// Its file is not in the source tree.
  case missing
  /// Its file, or its tests against it, have compiler errors.
  case errors([Diagnostic], inTests: Bool)
  /// It compiles only with code from other exercises that were left out: each entry is
  /// one of those exercises and, when the errors show it, the name it uses from it.
  case needs([Need])

  public struct Need: Sendable, Equatable {
    public var exercise: String
    /// The name it uses from that exercise, when the errors show one.
    public var name: String?
  }

  /// True when the exercise's own files are at fault (missing or with errors), not only
  /// the code it uses.
  public var isOwnFault: Bool {
    if case .needs = self { return false }
    return true
  }
}

/// Decides which exercises a chapter is built without, so that one exercise's compile error
/// never hides the others.
///
/// The runner builds the chapter; when the build fails, ``leaveOut(after:)`` takes the
/// errors and leaves out every exercise whose file or tests have one; the runner builds
/// again without them. An exercise that compiled before but fails once others are left out
/// uses their code, and is left out in turn, naming them. It ends when a build succeeds,
/// when an error lies in no exercise's file (a shared helper, the support modules), or
/// when every exercise is left out. This type holds no build and runs nothing: it is the
/// state of that loop, so it can be tested on diagnostics alone.
public struct PartialBuild: Sendable {
  public let chapter: Chapter
  public let source: SourceTree
  /// The workbook root (paths in diagnostics are absolute).
  public let root: URL
  /// Exercises left out so far, with why, in the order they were left out.
  public private(set) var leftOut: [(id: String, reason: LeftOut)] = []
  /// How many failed builds were read so far.
  public private(set) var failedBuilds = 0

  public init(chapter: Chapter, source: SourceTree, root: URL, missing: [String] = []) {
    self.chapter = chapter
    self.source = source
    self.root = root
    leftOut = missing.map { ($0, .missing) }
  }

  public func reason(for id: String) -> LeftOut? {
    leftOut.first { $0.id == id }?.reason
  }

  /// The exercises still in the build.
  public var remaining: [Exercise] {
    chapter.exercises.filter { reason(for: $0.id) == nil }
  }

  /// Files (relative to the root) the build leaves out: each left-out exercise's file (when
  /// it exists) and every test file of it.
  public var skippedFiles: [String] {
    leftOut.flatMap { entry -> [String] in
      guard let exercise = chapter.exercises.first(where: { $0.id == entry.id }) else {
        return []
      }
      let tests = testFiles(of: exercise)
      if entry.reason == .missing { return tests }
      return [chapter.sourcePath(exercise, source: source)] + tests
    }
  }

  /// The exercise's test files, relative to the root: its `testFile`, and every other file
  /// of the test folder that starts with the same number as the exercise's file
  /// ("02-ResumeOnceStressTests.swift" belongs to "02-ResumeOnce.swift").
  public func testFiles(of exercise: Exercise) -> [String] {
    var files = [chapter.testPath(exercise)]
    if let number = Self.numberPrefix(exercise.file) {
      let folder = root.appendingPathComponent(chapter.testFolder)
      let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
      for name in names.sorted() where name.hasSuffix(".swift") && name.hasPrefix(number) {
        let path = "\(chapter.testFolder)/\(name)"
        if !files.contains(path) { files.append(path) }
      }
    }
    return files
  }

  /// "02-" for "02-ResumeOnce.swift"; nil when the name does not start with digits and a dash.
  static func numberPrefix(_ file: String) -> String? {
    let digits = file.prefix { $0.isNumber }
    guard !digits.isEmpty, file.dropFirst(digits.count).first == "-" else { return nil }
    return digits + "-"
  }

  /// The exercise whose file or tests are at `path` (relative to the root), and whether it
  /// is a test file.
  func owner(of path: String) -> (exercise: Exercise, inTests: Bool)? {
    if let exercise = chapter.exercises.first(where: {
      chapter.sourcePath($0, source: source) == path
    }) {
      return (exercise, false)
    }
    for exercise in chapter.exercises where testFiles(of: exercise).contains(path) {
      return (exercise, true)
    }
    return nil
  }

  /// Reads the errors of a failed build and leaves out the exercises they lie in. Returns
  /// true when it left out at least one more exercise, every error lay in one, and at
  /// least one exercise remains (so another build is worth it); false when some error lies
  /// outside every exercise still in the build, or nothing is left to build.
  public mutating func leaveOut(after build: BuildResult) -> Bool {
    let context = GradingContext(
      root: root.path, sourceFolder: source.folder, suite: "", testModule: "",
      untouchedStarter: false, file: "")
    let chapterSource = "\(source.folder)/\(chapter.folder)/"
    var found: [String: (errors: [Diagnostic], inTests: Bool)] = [:]
    var order: [String] = []
    var unattributed = false
    for error in build.diagnostics where error.severity == .error {
      let path = context.relative(error.path)
      if let (exercise, inTests) = owner(of: path), reason(for: exercise.id) == nil {
        if found[exercise.id] == nil { order.append(exercise.id) }
        found[exercise.id, default: ([], false)].errors.append(error)
        if inTests { found[exercise.id]?.inTests = true }
      } else if path.hasPrefix(chapterSource) || path.hasPrefix(chapter.testFolder + "/") {
        unattributed = true  // a shared file of the chapter, or a test helper
      } else if ["Chapters/", "Solutions/", "Tests/"].contains(where: { path.hasPrefix($0) }) {
        continue  // another chapter's error, reported under that chapter
      } else {
        unattributed = true
      }
    }
    if build.diagnostics.allSatisfy({ $0.severity != .error }) { unattributed = true }
    defer { failedBuilds += 1 }
    let leftBefore = leftOut.map(\.id)  // missing files included: they declare nothing
    for id in order {
      guard let entry = found[id] else { continue }
      // After the first build, an exercise that compiled before and fails now uses code of
      // the exercises left out since.
      // Removing files can only take declarations away, so after the first build an
      // exercise that compiled before and fails now uses code of the ones left out.
      // Except errors of the compiler's later pass (values that cross between tasks and
      // actors): Swift reports them only once no file compiled with this one has a
      // type-checking error, so a file that has them was broken all along.
      let laterPass = entry.errors.contains { error in
        !DiagnosticGroups.laterStageGroups.isDisjoint(
          with: DiagnosticGroups.groups(in: error.message))
      }
      // And except an exercise whose file lies in a subfolder of its chapter: that folder is
      // a module of its own (Package.swift's submodules), which cannot use the others' code;
      // it was not compiled at all while the chapter's module had errors.
      let ownModule = chapter.exercises.first { $0.id == id }?.file.contains("/") == true
      if failedBuilds > 0, !leftBefore.isEmpty, !laterPass, !ownModule {
        let named = needs(entry.errors, from: leftBefore)
        leftOut.append(
          (id, .needs(named.isEmpty ? leftBefore.map { LeftOut.Need(exercise: $0) } : named)))
      } else {
        leftOut.append((id, .errors(entry.errors, inTests: entry.inTests)))
      }
    }
    return !order.isEmpty && !unattributed && !remaining.isEmpty
  }

  /// Which of `candidates` (left-out exercise ids) declare a name the errors use: a name
  /// the compiler quotes (`cannot find 'half' in scope`), else a name on the line the error
  /// points at (a call whose labels no longer match); empty when none does.
  func needs(_ errors: [Diagnostic], from candidates: [String]) -> [LeftOut.Need] {
    func matches(_ names: [String]) -> [LeftOut.Need] {
      var result: [LeftOut.Need] = []
      for name in names {
        for id in candidates {
          guard let exercise = chapter.exercises.first(where: { $0.id == id }),
            declares(name, in: exercise),
            !result.contains(where: { $0.exercise == id && $0.name == name })
          else { continue }
          result.append(LeftOut.Need(exercise: id, name: name))
        }
      }
      return result
    }
    let quoted = matches(errors.flatMap { Self.quotedNames(in: $0.message) })
    if !quoted.isEmpty { return quoted }
    return matches(errors.compactMap(\.sourceLine).flatMap(Self.identifiers(in:)))
  }

  /// The identifiers on a line of code, in order, without repeats.
  static func identifiers(in line: String) -> [String] {
    var seen: Set<String> = []
    return line.matches(of: #/[A-Za-z_][A-Za-z0-9_]*/#).map { String($0.output) }.filter {
      seen.insert($0).inserted
    }
  }

  /// The names the compiler quotes in a message: `cannot find 'half' in scope` → half.
  static func quotedNames(in message: String) -> [String] {
    message.matches(of: #/'([A-Za-z_][A-Za-z0-9_]*)'/#).map { String($0.output.1) }
  }

  /// True when the exercise's file declares `name` (a type, function, property or alias).
  func declares(_ name: String, in exercise: Exercise) -> Bool {
    let url = root.appendingPathComponent(chapter.sourcePath(exercise, source: source))
    guard let text = try? String(contentsOf: url, encoding: .utf8) else { return false }
    let keywords = "class|struct|enum|actor|protocol|func|var|let|typealias|case"
    let escaped = NSRegularExpression.escapedPattern(for: name)
    guard
      let pattern = try? NSRegularExpression(
        pattern: "\\b(\(keywords))\\s+\(escaped)\\b")
    else { return false }
    return pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
  }
}
