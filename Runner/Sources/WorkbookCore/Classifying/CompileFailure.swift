import Foundation

/// The "does not compile" reports of a chapter: for each exercise left out of the build
/// (see ``PartialBuild``), its own errors or the exercise whose code it needs; for the
/// exercises still in a build that failed anyway, the errors that lie outside every
/// exercise's file.
public enum CompileFailure {
  /// At most this many errors are shown per exercise.
  public static let errorsShown = 3

  /// The report of an exercise left out of the build.
  public static func report(
    _ exercise: Exercise, leftOut reason: LeftOut, chapter: Chapter, root: URL,
    source: SourceTree
  ) -> ExerciseReport {
    var report = ExerciseReport(
      id: exercise.id, name: exercise.name, file: chapter.sourcePath(exercise, source: source),
      verdict: .doesNotCompile,
      details: details(reason, of: exercise, chapter: chapter, root: root, source: source),
      hint: hintCommand(exercise), challenge: exercise.challenge)
    report.breaksBuild = reason.isOwnFault
    return report
  }

  /// The lines under an exercise left out of the build.
  static func details(
    _ reason: LeftOut, of exercise: Exercise, chapter: Chapter, root: URL, source: SourceTree
  ) -> [String] {
    switch reason {
    case .missing:
      let path = chapter.sourcePath(exercise, source: source)
      return ["file missing: \(path); restore it with `git checkout -- \(path)`"]
    case .errors(let errors, let inTests):
      var lines: [String] = []
      if inTests {
        lines.append(
          "the tests for this exercise do not compile against your code (did a name, a "
            + "signature or an isolation change? The tests call your code as its doc comments "
            + "promise, for example synchronously from any thread):")
      }
      let context = relativizer(root: root, source: source)
      for error in errors.prefix(errorsShown) {
        lines.append(contentsOf: error.rendered(relativePath: context.relative(error.path)))
      }
      if errors.count > errorsShown { lines.append(moreErrors(errors.count - errorsShown)) }
      // The groups of errors in the tests would explain how to fix the tests.
      if !inTests { lines.append(contentsOf: groupLines(errors)) }
      return lines
    case .needs(let needs):
      return neededLines(needs, chapter: chapter)
    }
  }

  /// The toolchain's notes on the diagnostic groups, read once.
  static let diagnosticGroups = DiagnosticGroups.ofToolchain()

  /// What the groups of `errors` mean, and, when they are type-checking errors about
  /// concurrency, that fixing them can reveal the next ones.
  static func groupLines(_ errors: [Diagnostic]) -> [String] {
    var lines = diagnosticGroups.explanations(of: errors)
    if DiagnosticGroups.mayHideLaterErrors(errors) {
      lines.append(DiagnosticGroups.laterErrorsNote)
    }
    return lines
  }

  /// "uses your `half` from 2.1 (Halving), which does not compile; fix 2.1 first …".
  static func neededLines(_ needs: [LeftOut.Need], chapter: Chapter) -> [String] {
    var byExercise: [(id: String, names: [String])] = []
    for need in needs {
      let names = need.name.map { [$0] } ?? []
      if let index = byExercise.firstIndex(where: { $0.id == need.exercise }) {
        byExercise[index].names.append(contentsOf: names)
      } else {
        byExercise.append((need.exercise, names))
      }
    }
    return byExercise.map { entry in
      let name = chapter.exercises.first { $0.id == entry.id }?.name ?? ""
      let what =
        entry.names.isEmpty ? "code" : entry.names.map { "`\($0)`" }.joined(separator: ", ")
      return "uses your \(what) from \(entry.id) (\(name)), which does not compile; fix "
        + "\(entry.id) first (make check EXERCISE=\(entry.id) shows its errors)"
    }
  }

  /// One line about an exercise not selected that the build left out because its own file
  /// is broken: what is wrong with it, and where; nil for one left out only because it
  /// uses a broken exercise's code (the broken one has its line).
  public static func summary(
    _ report: ExerciseReport, reason: LeftOut, root: URL, source: SourceTree
  ) -> String? {
    let name = "\(report.id) \(report.name)"
    switch reason {
    case .missing:
      return "\(name) was left out of this check: its file \(report.file) is missing"
    case .errors(let errors, let inTests):
      let what = inTests ? "its tests do not compile against it" : "it does not compile"
      guard let first = errors.first else { return "\(name) was left out of this check: \(what)" }
      let path = relativizer(root: root, source: source).relative(first.path)
      let more = errors.count > 1 ? " (and \(errors.count - 1) more)" : ""
      return "\(name) was left out of this check, as \(what): "
        + "\(path):\(first.line):\(first.column): \(first.message)\(more); "
        + "make check EXERCISE=\(report.id) shows the errors"
    case .needs:
      return nil
    }
  }

  /// "does not compile" for the exercises still in a build that failed with errors in no
  /// exercise's file (a shared helper, a support module, the linker), with those errors as
  /// the chapter's notes; errors in the `leftOut` files are reported under their exercises.
  public static func report(
    chapter: Chapter, exercises: [Exercise], build: BuildResult, root: URL, source: SourceTree,
    leftOut: [String] = [], broken: [String] = []
  ) -> ChapterReport {
    let context = relativizer(root: root, source: source)
    let excluded = Set(leftOut)
    let allErrors = build.diagnostics.filter { $0.severity == .error }
    let errors = allErrors.filter { !excluded.contains(context.relative($0.path)) }
    let otherChapters = ["Chapters/", "Solutions/", "Tests/"]
    let chapterSource = "\(source.folder)/\(chapter.folder)/"
    let chapterErrors = errors.map { ($0, context.relative($0.path)) }.filter { _, path in
      path.hasPrefix(chapterSource) || path.hasPrefix(chapter.testFolder + "/")
        || !otherChapters.contains { path.hasPrefix($0) }
    }

    var notes: [String] = []
    for (error, path) in chapterErrors.prefix(errorsShown * 2) {
      notes.append(contentsOf: error.rendered(relativePath: path))
    }
    if chapterErrors.count > errorsShown * 2 {
      notes.append(moreErrors(chapterErrors.count - errorsShown * 2))
    }
    if allErrors.isEmpty {
      let unlocated = DiagnosticsParser.unlocatedErrors(build.output)
      let shown = unlocated.isEmpty ? Classifier.stderrTail(build.output, lines: 10) : unlocated
      notes.append("the build failed:")
      notes.append(contentsOf: shown.prefix(10).map { "  " + $0 })
    }
    let reason: String
    if !chapterErrors.isEmpty {
      reason =
        "not graded: chapter \(chapter.number) does not compile, and the errors above are "
        + "in no exercise's file"
    } else if !allErrors.isEmpty, !broken.isEmpty {
      reason =
        "not graded: chapter \(chapter.number) does not compile (errors in "
        + "\(broken.joined(separator: ", ")))"
    } else {
      reason = "not graded: chapter \(chapter.number) does not compile (see the errors above)"
    }
    let reports = exercises.map { exercise -> ExerciseReport in
      ExerciseReport(
        id: exercise.id, name: exercise.name, file: chapter.sourcePath(exercise, source: source),
        verdict: .doesNotCompile, details: [reason],
        hint: hintCommand(exercise), challenge: exercise.challenge)
    }
    return ChapterReport(
      number: chapter.number, title: chapter.title, folder: chapter.folder, compiled: false,
      notes: notes, exercises: reports)
  }

  /// A failed build read once, without building again (the mistakes checker's): each
  /// selected exercise with errors in its files gets them, the others "not graded".
  public static func readOnce(
    chapter: Chapter, exercises: [Exercise], build: BuildResult, root: URL, source: SourceTree
  ) -> ChapterReport {
    var plan = PartialBuild(chapter: chapter, source: source, root: root)
    _ = plan.leaveOut(after: build)
    let remaining = exercises.filter { plan.reason(for: $0.id) == nil }
    var report = Self.report(
      chapter: chapter, exercises: remaining, build: build, root: root, source: source,
      leftOut: plan.skippedFiles, broken: plan.leftOut.map(\.id))
    let graded = Dictionary(uniqueKeysWithValues: report.exercises.map { ($0.id, $0) })
    report.exercises = exercises.compactMap { exercise in
      if let reason = plan.reason(for: exercise.id) {
        return Self.report(
          exercise, leftOut: reason, chapter: chapter, root: root, source: source)
      }
      return graded[exercise.id]
    }
    return report
  }

  static func relativizer(root: URL, source: SourceTree) -> GradingContext {
    GradingContext(
      root: root.path, sourceFolder: source.folder, suite: "", testModule: "",
      untouchedStarter: false, file: "")
  }
}

/// "(1 more error)", "(3 more errors)".
func moreErrors(_ count: Int) -> String {
  "(\(count) more error\(count == 1 ? "" : "s"))"
}
