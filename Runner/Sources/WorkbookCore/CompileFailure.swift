import Foundation

/// Turns a failed build into "does not compile" for every exercise of a chapter, with the
/// compiler's errors attributed to the exercise whose file (starter or test) has them.
public enum CompileFailure {
  /// At most this many errors are shown per exercise.
  public static let errorsShown = 3

  public static func report(
    chapter: Chapter, exercises: [Exercise], build: BuildResult, root: URL, source: SourceTree
  ) -> ChapterReport {
    let context = GradingContext(
      root: root.path, sourceFolder: source.folder, suite: "", testModule: "",
      untouchedStarter: false, file: "")
    let errors = build.diagnostics.filter { $0.severity == .error }
    var byExercise: [String: [(Diagnostic, String)]] = [:]
    var testErrors: Set<String> = []
    var chapterErrors: [(Diagnostic, String)] = []
    let chapterSource = "\(source.folder)/\(chapter.folder)/"
    let otherChapters = ["Chapters/", "Solutions/", "Tests/"]

    for error in errors {
      let path = context.relative(error.path)
      if let exercise = chapter.exercises.first(where: {
        chapter.sourcePath($0, source: source) == path
      }) {
        byExercise[exercise.id, default: []].append((error, path))
      } else if let exercise = chapter.exercises.first(where: { chapter.testPath($0) == path }) {
        byExercise[exercise.id, default: []].append((error, path))
        testErrors.insert(exercise.id)
      } else if path.hasPrefix(chapterSource) || path.hasPrefix(chapter.testFolder + "/") {
        chapterErrors.append((error, path))
      } else if otherChapters.contains(where: { path.hasPrefix($0) }) {
        continue  // another chapter's error, reported under that chapter
      } else {
        chapterErrors.append((error, path))
      }
    }

    var notes: [String] = []
    for (error, path) in chapterErrors.prefix(errorsShown * 2) {
      notes.append(contentsOf: error.rendered(relativePath: path))
    }
    if chapterErrors.count > errorsShown * 2 {
      notes.append(moreErrors(chapterErrors.count - errorsShown * 2))
    }
    if errors.isEmpty {
      let unlocated = DiagnosticsParser.unlocatedErrors(build.output)
      let shown = unlocated.isEmpty ? Classifier.stderrTail(build.output, lines: 10) : unlocated
      notes.append("the build failed:")
      notes.append(contentsOf: shown.prefix(10).map { "  " + $0 })
    }

    let withErrors = exercises.filter { byExercise[$0.id] != nil }.map(\.id)
    let reason: String
    if withErrors.isEmpty {
      reason = "see the errors above"
    } else {
      reason = "errors in \(withErrors.joined(separator: ", "))"
    }
    let reports = exercises.map { exercise -> ExerciseReport in
      var details: [String] = []
      if let found = byExercise[exercise.id] {
        if testErrors.contains(exercise.id) {
          details.append(
            "the tests for this exercise do not compile against your code "
              + "(did a name or signature change?):")
        }
        for (error, path) in found.prefix(errorsShown) {
          details.append(contentsOf: error.rendered(relativePath: path))
        }
        if found.count > errorsShown {
          details.append(moreErrors(found.count - errorsShown))
        }
      } else {
        details.append(
          "not graded: chapter \(chapter.number) does not compile (\(reason))")
      }
      return ExerciseReport(
        id: exercise.id, name: exercise.name, file: chapter.sourcePath(exercise, source: source),
        verdict: .doesNotCompile, details: details, hint: hintCommand(exercise))
    }
    return ChapterReport(
      number: chapter.number, title: chapter.title, folder: chapter.folder, compiled: false,
      notes: notes, exercises: reports)
  }
}

/// "(1 more error)", "(3 more errors)".
func moreErrors(_ count: Int) -> String {
  "(\(count) more error\(count == 1 ? "" : "s"))"
}
