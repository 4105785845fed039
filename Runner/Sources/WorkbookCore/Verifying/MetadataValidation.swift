import Foundation

/// The result of one named check: no problems means it passed.
public struct CheckResult: Sendable, Equatable {
  public var name: String
  public var problems: [String]

  public init(_ name: String, _ problems: [String] = []) {
    self.name = name
    self.problems = problems
  }

  public var passed: Bool { problems.isEmpty }
}

/// Checks workbook.json against the package and the files on disk.
public enum MetadataValidator {
  /// The `("01-Callbacks", "Callbacks", …)` entries of the `chapters` list in Package.swift,
  /// read as text (evaluating the manifest would need the toolchain and the environment).
  public static func packageChapters(_ manifest: String) -> [(folder: String, module: String)] {
    guard let start = manifest.range(of: "let chapters"),
      let equals = manifest[start.upperBound...].firstIndex(of: "="),
      let open = manifest[equals...].firstIndex(of: "[")
    else { return [] }
    // The list ends at the bracket that closes `open`.
    var depth = 0
    var close = manifest.endIndex
    for index in manifest[open...].indices {
      if manifest[index] == "[" { depth += 1 }
      if manifest[index] == "]" {
        depth -= 1
        if depth == 0 {
          close = index
          break
        }
      }
    }
    let body = manifest[open..<close]
    // `("01-Callbacks", "Callbacks")`, or with more after the module (the modules it uses).
    let pair = #/\(\s*"(?<folder>[^"]+)"\s*,\s*"(?<module>[^"]+)"\s*(?:\)|,)/#
    return body.matches(of: pair).map { (String($0.output.folder), String($0.output.module)) }
  }

  /// The workbook-wide check: chapters agree with Package.swift; chapter numbers, exercise
  /// ids and suite names are unique.
  public static func validateChapters(_ workbook: Workbook, manifest: String) -> CheckResult {
    var problems: [String] = []
    let declared = packageChapters(manifest)
    let listed = workbook.chapters.map { ($0.folder, $0.module) }
    if declared.isEmpty {
      problems.append("Package.swift has no `chapters` list of (folder, module) pairs")
    } else if declared.map(\.folder) != listed.map(\.0) || declared.map(\.module) != listed.map(\.1)
    {
      let show = { (pairs: [(String, String)]) in
        pairs.map { "\($0.0)/\($0.1)" }.joined(separator: ", ")
      }
      problems.append(
        "Package.swift lists [\(show(declared.map { ($0.folder, $0.module) }))] "
          + "but workbook.json lists [\(show(listed))]")
    }
    for chapter in workbook.chapters {
      if Int(chapter.folder.prefix(2)) != chapter.number {
        problems.append(
          "chapter \(chapter.number): folder \(chapter.folder) does not start with its number")
      }
      // A challenge gathers the chapter's patterns, so it comes last.
      let challenges = chapter.exercises.filter(\.challenge).map(\.id)
      if challenges.count > 1 {
        problems.append(
          "chapter \(chapter.number): \(challenges.count) challenges "
            + "(\(challenges.joined(separator: ", "))); a chapter has at most one")
      } else if let challenge = challenges.first, chapter.exercises.last?.id != challenge {
        problems.append(
          "chapter \(chapter.number): challenge \(challenge) is not the chapter's last exercise")
      }
      // `uses` names earlier exercises of the same chapter (their code is in its module).
      for (index, exercise) in chapter.exercises.enumerated() {
        let earlier = Set(chapter.exercises[..<index].map(\.id))
        for used in exercise.uses where !earlier.contains(used) {
          problems.append(
            "exercise \(exercise.id): uses \(used), which is not an earlier exercise of chapter "
              + "\(chapter.number)")
        }
      }
      for construct in chapter.forbidden ?? []
      where construct.construct.trimmingCharacters(in: .whitespaces).isEmpty
        || construct.why.trimmingCharacters(in: .whitespaces).isEmpty
      {
        problems.append(
          "chapter \(chapter.number): a forbidden construct needs both `construct` and `why`")
      }
    }
    problems.append(contentsOf: noteProblems(workbook))
    problems.append(
      contentsOf: duplicates(workbook.chapters.map { String($0.number) }, "chapter number"))
    problems.append(contentsOf: duplicates(workbook.exercises.map(\.id), "exercise id"))
    problems.append(contentsOf: duplicates(workbook.exercises.map(\.suite), "suite name"))
    return CheckResult("workbook.json matches Package.swift; ids and suites are unique", problems)
  }

  /// What is wrong with the notes: each needs a unique id, a message, something that raises
  /// it, scopes that name exercises, and a noted alternative that proves it; each noted
  /// alternative must name a note that applies to its exercise.
  static func noteProblems(_ workbook: Workbook) -> [String] {
    let rules = workbook.notes ?? []
    let ids = Set(workbook.exercises.map(\.id))
    var problems = duplicates(rules.map(\.id), "note id")
    for rule in rules {
      if rule.message.trimmingCharacters(in: .whitespaces).isEmpty {
        problems.append("note \(rule.id): has no message")
      }
      if (rule.constructs ?? []).isEmpty, rule.detector == nil {
        problems.append("note \(rule.id): needs `constructs` or a `detector`")
      }
      if rule.exercises.isEmpty {
        problems.append("note \(rule.id): applies to no exercise (`exercises` is empty)")
      }
      for scope in rule.exercises + (rule.except ?? [])
      where !NoteRule.isValidScope(scope, ids: ids) {
        problems.append(
          "note \(rule.id): \"\(scope)\" is not an exercise id, a chapter (\"3.*\") or \"*\"")
      }
      let proofs = workbook.exercises.flatMap { exercise in
        exercise.alternatives.filter { ($0.notes ?? []).contains(rule.id) }
      }
      if proofs.isEmpty {
        problems.append(
          "note \(rule.id): no alternative names it (`\"notes\": [\"\(rule.id)\"]`), so "
            + "nothing proves that it is found")
      }
    }
    for exercise in workbook.exercises {
      for alternative in exercise.alternatives {
        for note in alternative.notes ?? [] {
          guard let rule = rules.first(where: { $0.id == note }) else {
            problems.append(
              "\(exercise.id) alternative \"\(alternative.name)\": names the note \"\(note)\", "
                + "which workbook.json's `notes` does not list")
            continue
          }
          if !rule.applies(to: exercise.id) {
            problems.append(
              "\(exercise.id) alternative \"\(alternative.name)\": names the note \"\(note)\", "
                + "which does not apply to \(exercise.id)")
          }
        }
      }
    }
    return problems
  }

  /// One exercise's metadata: files exist, at least two hints, a known starter verdict,
  /// an id that belongs to its chapter, valid mistakes and alternatives (and, with a
  /// `catalogue`, at least its minimum number of each).
  public static func validate(
    _ exercise: Exercise, in chapter: Chapter, root: URL, catalogue: Catalogue? = nil
  ) -> CheckResult {
    var problems: [String] = []
    let files = [
      ("starter", chapter.starterPath(exercise)),
      ("solution", chapter.solutionPath(exercise)),
      ("test", chapter.testPath(exercise)),
    ]
    for (role, path) in files
    where !FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path) {
      problems.append("\(role) file \(path) is missing")
    }
    if exercise.hints.count < 2 {
      problems.append("has \(exercise.hints.count) hint(s); needs at least 2")
    }
    if exercise.hints.contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
      problems.append("has an empty hint")
    }
    if Verdict(rawValue: exercise.starterVerdict) == nil {
      let valid = Verdict.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
      problems.append("starterVerdict \"\(exercise.starterVerdict)\" is not one of \(valid)")
    } else if exercise.starterVerdict == Verdict.passed.rawValue {
      problems.append("starterVerdict is \"passed\": a starter must fail its tests")
    }
    if !exercise.id.hasPrefix("\(chapter.number).") {
      problems.append("id \(exercise.id) does not start with its chapter number \(chapter.number)")
    }
    problems.append(contentsOf: validateVariants(exercise, root: root, catalogue: catalogue))
    return CheckResult("\(exercise.id) metadata", problems)
  }

  /// The rules for `mistakes` and `alternatives`: each source exists, is a `.swift` or
  /// `.patch` file under `Mistakes/` (for a mistake) or `Alternatives/` (for an
  /// alternative); a mistake expects failed, never resumed, crashed or does not compile,
  /// with a non-empty phrase; names are non-empty and unique within the exercise; with a
  /// `catalogue`, at least its minimum number of each.
  public static func validateVariants(
    _ exercise: Exercise, root: URL, catalogue: Catalogue?
  ) -> [String] {
    var problems: [String] = []
    func checkSource(_ kind: String, _ name: String, _ source: String, folder: String) {
      let label = "\(kind) \"\(name)\""
      if !source.hasSuffix(".swift") && !source.hasSuffix(".patch") {
        problems.append("\(label): source \(source) is neither a .swift nor a .patch file")
      }
      if !source.hasPrefix(folder + "/") || source.split(separator: "/").contains("..") {
        problems.append("\(label): source \(source) is not under \(folder)/")
      }
      var isFolder: ObjCBool = false
      let path = root.appendingPathComponent(source).path
      if !FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) || isFolder.boolValue
      {
        problems.append("\(label): source \(source) is missing")
      }
    }
    for mistake in exercise.mistakes {
      checkSource("mistake", mistake.name, mistake.source, folder: "Mistakes")
      let valid = Mistake.verdicts.map(\.rawValue)
      if !valid.contains(mistake.verdict) {
        let list = valid.map { "\"\($0)\"" }.joined(separator: ", ")
        problems.append(
          "mistake \"\(mistake.name)\": verdict \"\(mistake.verdict)\" is not one of \(list)")
      }
      if mistake.phrase.trimmingCharacters(in: .whitespaces).isEmpty {
        problems.append(
          "mistake \"\(mistake.name)\": phrase is empty; give words the verdict's message "
            + "must contain")
      }
    }
    for alternative in exercise.alternatives {
      checkSource("alternative", alternative.name, alternative.source, folder: "Alternatives")
    }
    let names = exercise.mistakes.map(\.name) + exercise.alternatives.map(\.name)
    if names.contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
      problems.append("a mistake or alternative has an empty name")
    }
    problems.append(
      contentsOf: duplicates(names.map { "\"\($0)\"" }, "the mistake/alternative name"))
    if let catalogue {
      if exercise.mistakes.count < catalogue.minimumMistakes {
        problems.append(
          "has \(exercise.mistakes.count) mistake(s); needs at least \(catalogue.minimumMistakes)")
      }
      if exercise.alternatives.count < catalogue.minimumAlternatives {
        problems.append(
          "has \(exercise.alternatives.count) alternative(s); needs at least "
            + "\(catalogue.minimumAlternatives)")
      }
    }
    return problems
  }

  static func duplicates(_ values: [String], _ what: String) -> [String] {
    var seen: Set<String> = []
    var reported: Set<String> = []
    var problems: [String] = []
    for value in values where !seen.insert(value).inserted && reported.insert(value).inserted {
      problems.append("\(what) \(value) is used more than once")
    }
    return problems
  }
}
