import Dispatch
import Foundation
import Synchronization

/// How to grade.
public struct GraderOptions: Sendable {
  public var root: URL
  public var source: SourceTree
  public var scratchPath: String
  /// Seconds before an exercise's test process is killed.
  public var timeout: Double
  /// How many exercise processes run at once.
  public var jobs: Int
  public var extraBuildArguments: [String]
  /// True: build each chapter on its own (`WORKBOOK_CHAPTER`), so a compile error in one
  /// chapter does not stop another. False: one build for everything selected.
  public var buildEachChapter: Bool
  /// True: the suites run their long form (`WORKBOOK_LONG_TESTS=1`), as `verify` and
  /// `mistakes` want; false: the short form a learner's check runs, unless the learner set
  /// `WORKBOOK_LONG_TESTS=1` themselves.
  public var longTests: Bool
  /// Sources (absolute paths) whose objects are deleted before each build, so that they are
  /// compiled again and their warnings printed again: the driver prints a file's warnings
  /// only when it compiles that file. Set by ``Grader/grade(_:)`` for the exercises of
  /// chapters whose answers fail on a warning.
  public var recompiledSources: [String] = []
  /// The notes a passing answer can earn (workbook.json's `"notes"`).
  public var noteRules: [NoteRule] = []

  public init(
    root: URL, source: SourceTree = .learner, scratchPath: String? = nil, timeout: Double = 30,
    jobs: Int = 2, extraBuildArguments: [String] = [], buildEachChapter: Bool = true,
    longTests: Bool = false
  ) {
    self.root = root
    self.source = source
    self.scratchPath =
      scratchPath ?? (source == .learner ? ".build-learner" : ".build-solutions")
    self.timeout = timeout
    self.jobs = max(1, jobs)
    self.extraBuildArguments = extraBuildArguments
    self.buildEachChapter = buildEachChapter
    self.longTests = longTests
  }
}

/// The command that shows the next hint for an exercise.
public func hintCommand(_ exercise: Exercise) -> String { hintCommand(id: exercise.id) }

/// The command that shows the next hint for the exercise `id`.
public func hintCommand(id: String) -> String { "make hint EXERCISE=\(id)" }

/// Builds chapters and grades their exercises, each exercise's suite in its own process.
public struct Grader: Sendable {
  public var options: GraderOptions
  public var status: StatusLine

  public init(options: GraderOptions, status: StatusLine = StatusLine(enabled: false)) {
    self.options = options
    self.status = status
  }

  /// Grades `selection` (chapters with the exercises to grade in each).
  public func grade(
    _ selection: [(chapter: Chapter, exercises: [Exercise])]
  ) throws(WorkbookError)
    -> (reports: [ChapterReport], builds: [BuildResult])
  {
    let warningSources = selection.filter { $0.chapter.warningsFail == true }.flatMap {
      chapter, exercises in
      exercises.map {
        options.root.appendingPathComponent(chapter.sourcePath($0, source: options.source)).path
      }
    }
    if options.recompiledSources.isEmpty, !warningSources.isEmpty {
      var grader = self
      grader.options.recompiledSources = warningSources
      return try grader.grade(selection)
    }
    defer { status.clear() }
    var reports: [ChapterReport] = []
    var builds: [BuildResult] = []
    if options.buildEachChapter {
      for (chapter, exercises) in selection {
        let (report, chapterBuilds) = try gradeLeavingOutBroken(chapter, exercises)
        builds.append(contentsOf: chapterBuilds)
        reports.append(report)
      }
    } else {
      let only = selection.count == 1 ? selection.first?.chapter.number : nil
      let skipped = testsOfMissingFiles(in: selection.map(\.chapter))
      let build = try build(
        chapter: only, skipping: skipped, label: "the \(options.source.folder.lowercased())")
      builds.append(build)
      for (chapter, exercises) in selection {
        reports.append(try grade(chapter, exercises, build: build, skipping: skipped))
      }
    }
    return (reports, builds)
  }

  func request(chapter: Int?, skipping skipped: [String] = []) -> BuildRequest {
    var request = BuildRequest(
      root: options.root, source: options.source, chapter: chapter,
      scratchPath: options.scratchPath, extraArguments: options.extraBuildArguments)
    request.skippedFiles = skipped
    request.recompiledSources = options.recompiledSources
    return request
  }

  // MARK: one chapter, without its broken exercises

  /// Builds the chapter; while the build fails with errors in exercises' files, builds it
  /// again without those exercises (see ``PartialBuild``), then grades the selected
  /// exercises still in the build. A broken exercise gets its errors, one that uses a
  /// broken exercise's code says so, and an exercise not selected that had to be left out
  /// is named in one line.
  func gradeLeavingOutBroken(
    _ chapter: Chapter, _ exercises: [Exercise]
  ) throws(WorkbookError) -> (ChapterReport, [BuildResult]) {
    var plan = PartialBuild(
      chapter: chapter, source: options.source, root: options.root,
      missing: chapter.exercises.filter { isMissing($0, of: chapter) }.map(\.id))
    func selectedRemain() -> Bool {
      exercises.contains { plan.reason(for: $0.id) == nil }
    }
    var builds: [BuildResult] = []
    var last: BuildResult?
    while selectedRemain() {
      let without = plan.leftOut.filter { $0.reason != .missing }.map(\.id)
      let label =
        without.isEmpty
        ? "chapter \(chapter.number)"
        : "chapter \(chapter.number) again, without \(without.joined(separator: ", ")) "
          + "(\(without.count == 1 ? "it does" : "they do") not compile)"
      let build = try build(chapter: chapter.number, skipping: plan.skippedFiles, label: label)
      builds.append(build)
      last = build
      if build.succeeded || !plan.leaveOut(after: build) { break }
    }

    var report: ChapterReport
    let remaining = exercises.filter { plan.reason(for: $0.id) == nil }
    if remaining.isEmpty {
      report = ChapterReport(
        number: chapter.number, title: chapter.title, folder: chapter.folder, compiled: false,
        exercises: [])
    } else if let last, last.succeeded, let product = last.testProduct {
      report = try run(chapter, remaining, product: product, skipping: plan.skippedFiles)
      report = failingOnWarnings(chapter, report, builds: builds)
    } else if let last {
      report = CompileFailure.report(
        chapter: chapter, exercises: remaining, build: last, root: options.root,
        source: options.source, leftOut: plan.skippedFiles)
    } else {
      report = ChapterReport(
        number: chapter.number, title: chapter.title, folder: chapter.folder, compiled: false,
        exercises: [])
    }

    // Every selected exercise in chapter order; the others left out as one line each.
    let graded = Dictionary(uniqueKeysWithValues: report.exercises.map { ($0.id, $0) })
    let selected = Set(exercises.map(\.id))
    report.exercises = exercises.compactMap { exercise in
      if let reason = plan.reason(for: exercise.id) {
        return CompileFailure.report(
          exercise, leftOut: reason, chapter: chapter, root: options.root,
          source: options.source)
      }
      return graded[exercise.id]
    }
    for entry in plan.leftOut where !selected.contains(entry.id) {
      guard let exercise = chapter.exercises.first(where: { $0.id == entry.id }) else {
        continue
      }
      let other = CompileFailure.report(
        exercise, leftOut: entry.reason, chapter: chapter, root: options.root,
        source: options.source)
      report.leftOutElsewhere.append(other)
      if let line = CompileFailure.summary(
        other, reason: entry.reason, root: options.root, source: options.source)
      {
        report.notes.append(line)
      }
    }
    if plan.leftOut.contains(where: { $0.reason != .missing }) { report.compiled = false }
    return (report, builds)
  }

  func build(
    chapter: Int?, skipping skipped: [String], label: String
  ) throws(WorkbookError)
    -> BuildResult
  {
    status.show("building \(label)…")
    return try BuildStep.run(request(chapter: chapter, skipping: skipped)) { step in
      status.show("building \(label)… \(step)")
    }
  }

  // MARK: missing files

  /// True when the exercise's graded file (its starter, for a learner) is not there.
  func isMissing(_ exercise: Exercise, of chapter: Chapter) -> Bool {
    let path = options.root.appendingPathComponent(
      chapter.sourcePath(exercise, source: options.source)
    ).path
    var isFolder: ObjCBool = false
    return !FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
      || isFolder.boolValue
  }

  /// The files to leave out of a build of several chapters: the test files of every
  /// exercise whose file is missing, since they cannot compile without it.
  func testsOfMissingFiles(in chapters: [Chapter]) -> [String] {
    chapters.flatMap { chapter in
      let plan = PartialBuild(chapter: chapter, source: options.source, root: options.root)
      return chapter.exercises.filter { isMissing($0, of: chapter) }.flatMap {
        plan.testFiles(of: $0)
      }
    }
  }

  /// One chapter of a build of several: the exercises whose file is missing are "does not
  /// compile", the others graded on the build (or "does not compile" when it failed).
  func grade(
    _ chapter: Chapter, _ exercises: [Exercise], build: BuildResult, skipping skipped: [String]
  ) throws(WorkbookError)
    -> ChapterReport
  {
    let missing = Set(exercises.filter { isMissing($0, of: chapter) }.map(\.id))
    let present = exercises.filter { !missing.contains($0.id) }
    var report: ChapterReport
    if build.succeeded, let product = build.testProduct {
      report = try run(chapter, present, product: product, skipping: skipped)
      report = failingOnWarnings(chapter, report, builds: [build])
    } else {
      report = CompileFailure.readOnce(
        chapter: chapter, exercises: present, build: build, root: options.root,
        source: options.source)
    }
    guard !missing.isEmpty else { return report }
    let graded = Dictionary(uniqueKeysWithValues: report.exercises.map { ($0.id, $0) })
    report.exercises = exercises.map { exercise in
      graded[exercise.id]
        ?? CompileFailure.report(
          exercise, leftOut: .missing, chapter: chapter, root: options.root,
          source: options.source)
    }
    return report
  }

  func run(
    _ chapter: Chapter, _ exercises: [Exercise], product: URL, skipping skipped: [String]
  ) throws(WorkbookError)
    -> ChapterReport
  {
    let request = request(
      chapter: options.buildEachChapter ? chapter.number : nil, skipping: skipped)
    let grades = Mutex<[String: Grade]>([:])
    let failures = Mutex<[WorkbookError]>([])
    let done = Mutex(0)
    let slots = DispatchSemaphore(value: options.jobs)
    let group = DispatchGroup()
    let options = self.options
    let status = self.status
    status.show("grading chapter \(chapter.number): 0 of \(exercises.count) done")
    for exercise in exercises {
      slots.wait()
      group.enter()
      DispatchQueue.global().async {
        defer {
          slots.signal()
          group.leave()
        }
        do throws(WorkbookError) {
          let grade = try Grader(options: options).gradeOne(
            chapter, exercise, product: product, request: request
          ).grade
          grades.withLock { $0[exercise.id] = grade }
        } catch {
          failures.withLock { $0.append(error) }
        }
        let finished = done.withLock { count in
          count += 1
          return count
        }
        status.show("grading chapter \(chapter.number): \(finished) of \(exercises.count) done")
      }
    }
    group.wait()
    if ChildProcess.interrupted { throw .interrupted }
    if let failure = failures.withLock({ $0.first }) { throw failure }
    let results = grades.withLock { $0 }
    return ChapterReport(
      number: chapter.number, title: chapter.title, folder: chapter.folder, compiled: true,
      exercises: exercises.map { exercise in
        report(chapter, exercise, results[exercise.id] ?? Grade(.failed, ["not graded"]))
      })
  }

  /// Runs one exercise's suite in its own process and grades it; also returns how long the
  /// process ran and whether the runner's time limit stopped it. `shortForm`: the suite's
  /// short form, whatever the options say.
  func gradeOne(
    _ chapter: Chapter, _ exercise: Exercise, product: URL, request: BuildRequest,
    shortForm: Bool = false
  ) throws(WorkbookError) -> (grade: Grade, seconds: Double, timedOut: Bool) {
    let start = DispatchTime.now()
    let run = try TestLauncher.run(
      product: product, filter: chapter.filter(for: exercise), request: request,
      timeout: options.timeout, longTests: options.longTests && !shortForm,
      shortForm: shortForm)
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    var grade = Classifier.grade(run, context(chapter, exercise))
    grade = forbidding(chapter, exercise, grade)
    grade = noting(chapter, exercise, grade)
    if run.outcome.omittedBytes > 0 {
      let printed = OutputCapture.describe(bytes: run.outcome.totalBytes)
      let kept = OutputCapture.describe(bytes: OutputCapture.defaultLimit)
      grade.details.append(
        "the tests printed \(printed); output truncated: the runner kept the first "
          + "and last \(kept) of each stream")
    }
    var timedOut = false
    if case .timedOut = run.outcome.termination { timedOut = true }
    return (grade, seconds, timedOut)
  }

  /// `grade`, failed if the exercise's file uses a construct its chapter forbids: passing
  /// tests do not count when the compiler's checks were switched off to get there. A crash
  /// or a hang becomes "failed" too, named under the construct: the race the construct hid
  /// crashes on some runs and not on others, and the verdict must not depend on luck.
  func forbidding(_ chapter: Chapter, _ exercise: Exercise, _ grade: Grade) -> Grade {
    guard let forbidden = chapter.forbidden, !forbidden.isEmpty else { return grade }
    let file = chapter.sourcePath(exercise, source: options.source)
    guard
      let source = try? String(
        contentsOf: options.root.appendingPathComponent(file), encoding: .utf8)
    else { return grade }
    let uses = ForbiddenConstructScanner.uses(
      of: forbidden, in: source, allowing: exercise.allowed)
    guard !uses.isEmpty else { return grade }
    var grade = grade
    grade.details.insert(contentsOf: ForbiddenConstructScanner.details(uses, file: file), at: 0)
    grade.verdict = .failed
    return grade
  }

  /// `grade` with the notes its file earns, when it passed: a note never changes a verdict,
  /// and a failing answer has more pressing things to hear.
  func noting(_ chapter: Chapter, _ exercise: Exercise, _ grade: Grade) -> Grade {
    guard grade.verdict == .passed, !options.noteRules.isEmpty else { return grade }
    let file = chapter.sourcePath(exercise, source: options.source)
    guard
      let source = try? String(
        contentsOf: options.root.appendingPathComponent(file), encoding: .utf8)
    else { return grade }
    var grade = grade
    grade.notes = NoteFinder.notes(in: source, exerciseID: exercise.id, rules: options.noteRules)
    return grade
  }

  /// `report`, with every exercise whose file compiled with a warning failed, when its
  /// chapter says so: the lesson is a file that compiles cleanly in the Swift 6 mode, and a
  /// warning there is an error the next language mode or a stricter setting will make. A
  /// crash or a hang keeps its verdict, with the warnings named under it.
  func failingOnWarnings(
    _ chapter: Chapter, _ report: ChapterReport, builds: [BuildResult]
  ) -> ChapterReport {
    guard chapter.warningsFail == true else { return report }
    let context = CompileFailure.relativizer(root: options.root, source: options.source)
    var seen: Set<String> = []
    let warnings = builds.flatMap(\.diagnostics).filter { warning in
      warning.severity == .warning
        && seen.insert("\(warning.path):\(warning.line):\(warning.column):\(warning.message)")
          .inserted
    }
    var report = report
    for index in report.exercises.indices {
      let file = report.exercises[index].file
      let own = warnings.filter { context.relative($0.path) == file }
      guard !own.isEmpty else { continue }
      var lines = [
        "\(file) compiles with \(own.count == 1 ? "a warning" : "\(own.count) warnings"); "
          + "this chapter's answers must compile without one in the Swift 6 mode:"
      ]
      for warning in own.prefix(CompileFailure.errorsShown) {
        lines.append(contentsOf: warning.rendered(relativePath: file))
      }
      if own.count > CompileFailure.errorsShown {
        lines.append("(and \(own.count - CompileFailure.errorsShown) more)")
      }
      lines.append(contentsOf: CompileFailure.diagnosticGroups.explanations(of: own))
      report.exercises[index].details.insert(contentsOf: lines, at: 0)
      let verdict = report.exercises[index].verdict
      if verdict != .crashed && verdict != .neverResumed {
        report.exercises[index].verdict = .failed
      }
      report.exercises[index].notes = []
    }
    return report
  }

  func context(_ chapter: Chapter, _ exercise: Exercise) -> GradingContext {
    let file = chapter.sourcePath(exercise, source: options.source)
    var untouched = false
    if options.source == .learner, !exercise.starterDigest.isEmpty {
      untouched =
        Digest.ofFile(options.root.appendingPathComponent(file)) == exercise.starterDigest
    }
    return GradingContext(
      root: options.root.path, sourceFolder: options.source.folder, suite: exercise.suite,
      testModule: chapter.testModule, untouchedStarter: untouched, file: file)
  }

  func report(_ chapter: Chapter, _ exercise: Exercise, _ grade: Grade) -> ExerciseReport {
    var report = ExerciseReport(
      id: exercise.id, name: exercise.name,
      file: chapter.sourcePath(exercise, source: options.source),
      verdict: grade.verdict, details: grade.details,
      hint: grade.verdict == .passed ? nil : hintCommand(exercise), challenge: exercise.challenge)
    report.notes = grade.verdict == .passed ? grade.notes : []
    return report
  }
}
