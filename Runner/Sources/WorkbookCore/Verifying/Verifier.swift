import Foundation

/// `workbook verify`: the developer check that the workbook is consistent.
///
/// Checks, each printed as one line (`ok` or `FAIL` with the problems under it):
/// - metadata: workbook.json agrees with Package.swift, ids and suites are unique (1), and
///   each exercise's files exist, it has at least two hints and a valid starterVerdict
///   (1 per exercise);
/// - solutions: they build with warnings as errors and no `warning:` line (1), and each
///   exercise's suite passes against its solution (1 per exercise);
/// - starters, as shipped: each starter (the file in Chapters/ if it is untouched,
///   otherwise the one committed at HEAD, so a learner's work in progress never counts)
///   matches `starterDigest` and grading it yields exactly `starterVerdict`, with the
///   diagnostic groups of `starterGroups` among its errors (1 per exercise; see
///   ``CommittedStarters``); a chapter whose starters list groups also builds them in the
///   Swift 5 language mode, which they must compile in (1 per such chapter);
/// - mistakes and alternatives: each mistake gets its verdict with its phrase, each
///   alternative passes (1 per variant; see ``MistakeChecker``).
///
/// So N + M = 2 + 3 × exercises + variants (+ 1 per chapter of legacy starters). The last line is `verify: N passed, M failed`.
public struct Verifier: Sendable {
  public var root: URL
  public var chapterNumber: Int?
  public var timeout: Double
  public var jobs: Int
  public var terminal: Terminal
  public var status: StatusLine

  public init(
    root: URL, chapterNumber: Int?, timeout: Double, jobs: Int, terminal: Terminal,
    status: StatusLine
  ) {
    self.root = root
    self.chapterNumber = chapterNumber
    self.timeout = timeout
    self.jobs = jobs
    self.terminal = terminal
    self.status = status
  }

  /// Runs every check, printing as it goes; returns the counts.
  public func run(print: (String) -> Void) throws(WorkbookError) -> (passed: Int, failed: Int) {
    var passed = 0
    var failed = 0
    func record(_ result: CheckResult) {
      if result.passed { passed += 1 } else { failed += 1 }
      Self.line(result, terminal: terminal).forEach(print)
    }

    print(terminal.paint("verify: metadata", .bold))
    let workbook: Workbook
    do {
      workbook = try MetadataLoader.load(root: root)
    } catch {
      record(CheckResult("workbook.json can be read", [error.description]))
      return (passed, failed)
    }
    let manifest =
      (try? String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8))
      ?? ""
    record(MetadataValidator.validateChapters(workbook, manifest: manifest))
    // The mutation report speaks for the solutions as they were when it was written.
    if FileManager.default.fileExists(
      atPath: root.appendingPathComponent(MutationReport.path).path)
    {
      let stale = MutationReport.staleExercises(root: root)
      record(
        CheckResult(
          "\(MutationReport.path) is current for every solution it lists",
          stale.map {
            "\($0): the solution changed since its mutation report; run "
              + "make mutate EXERCISE=\($0) WRITE=1 and explain any survivor"
          }))
    }
    let chapters = workbook.chapters.filter { chapterNumber == nil || $0.number == chapterNumber }
    let selection = chapters.map { (chapter: $0, exercises: $0.exercises) }
    for chapter in chapters {
      for exercise in chapter.exercises {
        record(
          MetadataValidator.validate(
            exercise, in: chapter, root: root, catalogue: workbook.catalogue))
      }
    }

    print(terminal.paint("verify: solutions (Solutions/, warnings are errors)", .bold))
    var solutionOptions = GraderOptions(
      root: root, source: .solutions, timeout: timeout, jobs: jobs,
      extraBuildArguments: ["-Xswiftc", "-warnings-as-errors"], buildEachChapter: false,
      longTests: true)
    solutionOptions.noteRules = workbook.notes ?? []
    let solutions = Grader(options: solutionOptions, status: status)
    let solved = try solutions.grade(selection)
    var buildProblems: [String] = []
    for build in solved.builds {
      let warnings = build.diagnostics.filter { $0.severity == .warning }
      for warning in warnings.prefix(10) {
        buildProblems.append(contentsOf: warning.rendered(relativePath: relative(warning.path)))
      }
      if warnings.isEmpty, DiagnosticsParser.hasWarnings(build.output) {
        buildProblems.append("the build printed a `warning:` line")
      }
      if !build.succeeded {
        let errors = build.diagnostics.filter { $0.severity == .error }
        buildProblems.append("the build failed")
        for error in errors.prefix(10) {
          buildProblems.append(contentsOf: error.rendered(relativePath: relative(error.path)))
        }
        if errors.isEmpty {
          buildProblems.append(
            contentsOf: DiagnosticsParser.unlocatedErrors(build.output).prefix(10))
        }
      }
    }
    record(CheckResult("solutions build without warnings", buildProblems))
    for chapter in solved.reports {
      for exercise in chapter.exercises {
        var problems: [String] = []
        if exercise.verdict != .passed, chapter.compiled {
          problems.append("graded \"\(exercise.verdict.rawValue)\"")
          problems.append(contentsOf: exercise.details.map { "  " + $0 })
        } else if !chapter.compiled {
          problems.append("the solutions do not compile")
        }
        // A reference answer that earns a caution note teaches the habit the note warns of.
        for note in exercise.notes where note.type.isCaution {
          problems.append("earns the \(note.type.rawValue) note \"\(note.id)\": \(note.rendered)")
        }
        record(CheckResult("\(exercise.id) solution passes", problems))
      }
    }

    print(terminal.paint("verify: starters (as committed, not your edits in Chapters/)", .bold))
    let shipped = CommittedStarters.resolve(root: root, chapters: chapters)
    let learnerEdited = shipped.starters.values.filter { $0.origin == .committed }
    if let note = shipped.note,
      shipped.starters.values.contains(where: { $0.origin != .workingCopy })
    {
      print("        \(note)")
    }
    // The starters are graded where they are, unless the learner has edited some: then in
    // a copy of the package whose Chapters/ holds the committed starters.
    var starterRoot = root
    var starterScratch: String?
    if !learnerEdited.isEmpty {
      let tree = VariantTree(
        root: root, folder: ".build-starters",
        copied: ["Package.swift", "Support", "Tests", "Chapters"])
      status.show("verify: copying the committed starters into .build-starters…")
      try tree.sync()
      for starter in learnerEdited {
        if let content = starter.content { try tree.write(starter.path, content) }
      }
      print(
        "        \(learnerEdited.count) of your files in Chapters/ differ from the committed "
          + "starters; graded the committed ones in .build-starters/ (your files are untouched)")
      starterRoot = tree.tree
      starterScratch = tree.scratchPath
    }
    // The short form, as `make check` runs it: the verdict checked is the learner's.
    let starters = Grader(
      options: GraderOptions(
        root: starterRoot, source: .learner, scratchPath: starterScratch, timeout: timeout,
        jobs: jobs),
      status: status)
    let graded = try starters.grade(selection)
    let reports = Dictionary(
      graded.reports.flatMap(\.exercises).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    for chapter in chapters {
      if let report = graded.reports.first(where: { $0.number == chapter.number }),
        !report.compiled, !report.notes.isEmpty
      {
        print("        chapter \(chapter.number) does not compile:")
        for note in report.notes { print("          \(note)") }
      }
      for exercise in chapter.exercises {
        var problems: [String] = []
        if case .mismatch(let problem) = shipped.starters[exercise.id]?.origin {
          problems.append(problem)
        }
        if let report = reports[exercise.id], report.verdict.rawValue != exercise.starterVerdict {
          problems.append(
            "graded \"\(report.verdict.rawValue)\", expected \"\(exercise.starterVerdict)\"")
          problems.append(contentsOf: report.details.map { "  " + $0 })
        } else if let report = reports[exercise.id] {
          let shown = report.details.joined(separator: "\n")
          var missing = exercise.starterGroups.filter { !shown.contains("[#\($0)]") }
          if !missing.isEmpty {
            // SwiftPM stops starting compile jobs once one has failed, so errors found only
            // in a file's own job (a closure's captures) can be missing from a build of
            // every module; the chapter's module alone, built again, has no other job to
            // race with.
            let errors = try starterErrors(of: exercise, in: chapter, root: starterRoot)
            let again = errors.map(\.message).joined(separator: "\n")
            missing = missing.filter { !again.contains("[#\($0)]") }
          }
          if !missing.isEmpty {
            problems.append(
              "its errors do not show "
                + missing.map { "[#\($0)]" }.joined(separator: ", ") + ":")
            problems.append(contentsOf: report.details.map { "  " + $0 })
          }
        }
        let groups =
          exercise.starterGroups.isEmpty
          ? "" : " with " + exercise.starterGroups.map { "[#\($0)]" }.joined(separator: ", ")
        record(
          CheckResult(
            "\(exercise.id) starter grades \"\(exercise.starterVerdict)\"\(groups)", problems))
      }
    }
    // Legacy code that stops compiling in Swift 6 must be code that compiled before.
    for chapter in chapters where chapter.exercises.contains(where: { !$0.starterGroups.isEmpty }) {
      record(try startersBuildInSwift5(chapter, root: starterRoot))
    }

    print(
      terminal.paint(
        "verify: mistakes and alternatives (each applied to a copy of Solutions/)", .bold))
    let checker = MistakeChecker(
      root: root, timeout: timeout, jobs: jobs, status: status, noteRules: workbook.notes ?? [])
    let (variantsPassed, variantsFailed) = try checker.run(selection) { record($0) }
    if variantsPassed + variantsFailed == 0 {
      print(terminal.paint("        (none listed in workbook.json)", .dim))
    }
    return (passed, failed)
  }

  /// The errors in `exercise`'s starter from a build of its chapter's module alone.
  func starterErrors(
    of exercise: Exercise, in chapter: Chapter, root: URL
  )
    throws(WorkbookError) -> [Diagnostic]
  {
    var request = BuildRequest(
      root: root, source: .learner, chapter: chapter.number, scratchPath: ".build-starter-groups",
      extraArguments: exercise.file.contains("/") ? [] : ["--target", chapter.module])
    request.buildsTests = false
    status.show("verify: building chapter \(chapter.number)'s module for \(exercise.id)'s errors…")
    let build = try BuildStep.run(request)
    return build.diagnostics.filter {
      $0.severity == .error && $0.path.hasSuffix("/" + chapter.folder + "/" + exercise.file)
    }
  }

  /// The check that `chapter`'s starters (in `root`'s Chapters/) build in the Swift 5
  /// language mode, as the legacy code they are did before its module moved to Swift 6.
  func startersBuildInSwift5(_ chapter: Chapter, root: URL) throws(WorkbookError) -> CheckResult {
    var request = BuildRequest(
      root: root, source: .learner, chapter: chapter.number, scratchPath: ".build-swift5")
    request.languageMode = 5
    // The chapter's modules only: its tests are Swift 6 code written against the answers.
    request.buildsTests = false
    status.show("verify: building chapter \(chapter.number)'s starters in the Swift 5 mode…")
    let build = try BuildStep.run(request) { step in
      status.show(
        "verify: building chapter \(chapter.number)'s starters in the Swift 5 mode… \(step)")
    }
    var problems: [String] = []
    if !build.succeeded {
      let errors = build.diagnostics.filter { $0.severity == .error }
      problems.append("the build failed")
      for error in errors.prefix(10) {
        problems.append(contentsOf: error.rendered(relativePath: relative(error.path)))
      }
    }
    return CheckResult(
      "chapter \(chapter.number)'s starters build in the Swift 5 language mode", problems)
  }

  /// A check as printed: `  ok    name`, or `  FAIL  name` with its problems under it.
  static func line(_ result: CheckResult, terminal: Terminal) -> [String] {
    if result.passed { return ["  \(terminal.paint("ok  ", .green))  \(result.name)"] }
    return ["  \(terminal.paint("FAIL", .red))  \(result.name)"]
      + result.problems.map { "          \($0)" }
  }

  func relative(_ path: String) -> String {
    GradingContext(
      root: root.path, sourceFolder: "", suite: "", testModule: "", untouchedStarter: false,
      file: ""
    ).relative(path)
  }
}
