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

  public init(
    root: URL, source: SourceTree = .learner, scratchPath: String? = nil, timeout: Double = 30,
    jobs: Int = 2, extraBuildArguments: [String] = [], buildEachChapter: Bool = true
  ) {
    self.root = root
    self.source = source
    self.scratchPath =
      scratchPath ?? (source == .learner ? ".build-learner" : ".build-solutions")
    self.timeout = timeout
    self.jobs = max(1, jobs)
    self.extraBuildArguments = extraBuildArguments
    self.buildEachChapter = buildEachChapter
  }
}

/// The command that shows the next hint for an exercise.
public func hintCommand(_ exercise: Exercise) -> String { "make hint EXERCISE=\(exercise.id)" }

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
    defer { status.clear() }
    var reports: [ChapterReport] = []
    var builds: [BuildResult] = []
    if options.buildEachChapter {
      for (chapter, exercises) in selection {
        let build = try build(chapter: chapter.number, label: "chapter \(chapter.number)")
        builds.append(build)
        reports.append(try grade(chapter, exercises, build: build))
      }
    } else {
      let only = selection.count == 1 ? selection.first?.chapter.number : nil
      let build = try build(chapter: only, label: "the \(options.source.folder.lowercased())")
      builds.append(build)
      for (chapter, exercises) in selection {
        reports.append(try grade(chapter, exercises, build: build))
      }
    }
    return (reports, builds)
  }

  func request(chapter: Int?) -> BuildRequest {
    BuildRequest(
      root: options.root, source: options.source, chapter: chapter,
      scratchPath: options.scratchPath, extraArguments: options.extraBuildArguments)
  }

  func build(chapter: Int?, label: String) throws(WorkbookError) -> BuildResult {
    status.show("building \(label)…")
    return try BuildStep.run(request(chapter: chapter)) { step in
      status.show("building \(label)… [\(step)]")
    }
  }

  func grade(
    _ chapter: Chapter, _ exercises: [Exercise], build: BuildResult
  ) throws(WorkbookError)
    -> ChapterReport
  {
    guard build.succeeded, let product = build.testProduct else {
      return CompileFailure.report(
        chapter: chapter, exercises: exercises, build: build, root: options.root,
        source: options.source)
    }
    let request = request(chapter: options.buildEachChapter ? chapter.number : nil)
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
          let run = try TestLauncher.run(
            product: product, filter: chapter.filter(for: exercise), request: request,
            timeout: options.timeout)
          let grade = Classifier.grade(run, context(chapter, exercise))
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
    ExerciseReport(
      id: exercise.id, name: exercise.name,
      file: chapter.sourcePath(exercise, source: options.source),
      verdict: grade.verdict, details: grade.details,
      hint: grade.verdict == .passed ? nil : hintCommand(exercise))
  }
}
