import Dispatch
import Foundation

/// The commands, wired together. `main.swift` only calls ``App/run(_:)``.
public enum App {
  /// Runs the command line (without the program name) and returns the exit status:
  /// 0 when everything checked passed, 1 otherwise, 2 for usage errors.
  public static func run(_ arguments: [String]) -> Int32 {
    do {
      let invocation = try ArgumentParser.parse(arguments)
      let root = URL(
        fileURLWithPath: invocation.root ?? FileManager.default.currentDirectoryPath
      ).standardizedFileURL
      let terminal = Terminal.current()
      switch invocation.command {
      case .help:
        Output.out(ArgumentParser.usage)
        return 0
      case .check:
        return try check(invocation, root: root, terminal: terminal)
      case .hint:
        return try hint(invocation, root: root)
      case .reset:
        return try reset(invocation, root: root)
      case .fingerprint:
        return try fingerprint(root: root)
      case .verify:
        return try verify(invocation, root: root, terminal: terminal)
      case .mistakes:
        return try mistakes(invocation, root: root, terminal: terminal)
      case .watch:
        return try watch(invocation, root: root, terminal: terminal)
      case .status:
        return try status(invocation, root: root)
      case .mutate:
        return try mutate(invocation, root: root, terminal: terminal)
      }
    } catch .interrupted {
      // The interrupt handler stops the children, says so, and exits; report nothing.
      while true { Thread.sleep(forTimeInterval: 1) }
    } catch {
      Output.err(error.description)
      return error.exitStatus
    }
  }

  // MARK: status

  /// Each exercise's standing without grading anything: "not started" for a file still as
  /// shipped, otherwise the verdict of its last check (or "not checked yet").
  static func status(_ invocation: Invocation, root: URL) throws(WorkbookError) -> Int32 {
    let workbook = try MetadataLoader.load(root: root)
    let selection = try select(invocation, in: workbook)
    let progress = ProgressStore(root: root).load()
    var allPassed = true
    for (chapter, exercises) in selection {
      Output.out("Chapter \(chapter.number) · \(chapter.title)")
      let width = exercises.map(\.name.count).max() ?? 0
      for exercise in exercises {
        let untouched =
          Digest.ofFile(root.appendingPathComponent(chapter.starterPath(exercise)))
          == exercise.starterDigest
        let entry = progress.exercises[exercise.id]
        let last = entry?.verdict
        let changed =
          entry?.digest.map {
            $0 != Digest.ofFile(root.appendingPathComponent(chapter.starterPath(exercise)))
          } ?? false
        let standing: String
        if untouched {
          standing = "not started (the file is as shipped)"
        } else if let last, changed {
          standing = "changed since its last check (\(last.rawValue) then)"
        } else if let last {
          standing = "\(last.rawValue) at its last check"
        } else {
          standing = "not checked yet"
        }
        if untouched || last != .passed || changed { allPassed = false }
        let name = exercise.name.padding(toLength: width, withPad: " ", startingAt: 0)
        Output.out("  \(exercise.id)  \(name)  \(standing)")
      }
    }
    return allPassed ? 0 : 1
  }

  // MARK: check

  static func check(
    _ invocation: Invocation, root: URL, terminal: Terminal
  ) throws(WorkbookError)
    -> Int32
  {
    let workbook = try MetadataLoader.load(root: root)
    let selection = try select(invocation, in: workbook)
    var report = try grade(
      selection, root: root, invocation: invocation, terminal: terminal,
      notes: workbook.notes ?? [])
    let problems = record(report, root: root)
    if report.next == nil, invocation.exercise != nil {
      report.next = nextAfterPass(selection, in: workbook, root: root)
    }
    if invocation.diagnosticLines {
      let lines = DiagnosticLinesFormat.render(report, root: root)
      if !lines.isEmpty { Output.out(lines) }
    } else if invocation.json {
      Output.out(report.json())
    } else {
      Output.out(
        TextRenderer(terminal: terminal, root: root).render(
          report,
          moreChapters: invocation.chapter == nil
            ? nil : nextChapter(after: selection, in: workbook)))
    }
    // After the verdicts, where they are seen; the exit status is the grade's alone.
    problems.forEach(Output.err)
    return report.allPassed ? 0 : 1
  }

  /// The chapters and exercises named on the command line (all when none is named).
  static func select(
    _ invocation: Invocation, in workbook: Workbook
  ) throws(WorkbookError)
    -> [(chapter: Chapter, exercises: [Exercise])]
  {
    if let number = invocation.chapter {
      guard let chapter = workbook.chapter(number: number) else {
        throw .usage("workbook: there is no chapter \(number). \(validChapters(workbook))")
      }
      return [(chapter, chapter.exercises)]
    }
    if let id = invocation.exercise {
      guard let exercise = workbook.exercise(id: id),
        let chapter = workbook.chapter(containing: exercise)
      else {
        throw .usage("workbook: there is no exercise \(id). \(validExercises(workbook))")
      }
      return [(chapter, [exercise])]
    }
    return workbook.chapters.map { ($0, $0.exercises) }
  }

  static func validChapters(_ workbook: Workbook) -> String {
    let list = workbook.chapters.map { "\($0.number) (\($0.title))" }.joined(separator: ", ")
    return list.isEmpty ? "workbook.json lists no chapters." : "Valid chapters: \(list)."
  }

  static func validExercises(_ workbook: Workbook) -> String {
    let list = workbook.exercises.map(\.id).joined(separator: ", ")
    return list.isEmpty ? "workbook.json lists no exercises." : "Valid exercises: \(list)."
  }

  static func grade(
    _ selection: [(chapter: Chapter, exercises: [Exercise])], root: URL, invocation: Invocation,
    terminal: Terminal, notes: [NoteRule]
  ) throws(WorkbookError) -> CheckReport {
    var options = GraderOptions(
      root: root, source: .learner, timeout: invocation.timeout, jobs: invocation.jobs)
    options.noteRules = notes
    let grader = Grader(
      options: options,
      status: StatusLine(enabled: terminal.progress && !invocation.json, plain: !invocation.json))
    // A chapter without exercises has nothing to build or grade.
    let graded = try grader.grade(selection.filter { !$0.exercises.isEmpty }).reports
    let chapters = selection.map { entry in
      graded.first { $0.number == entry.chapter.number }
        ?? ChapterReport(
          number: entry.chapter.number, title: entry.chapter.title, folder: entry.chapter.folder,
          compiled: true, notes: ["(no exercises yet)"], exercises: [])
    }
    return CheckReport(chapters: chapters)
  }

  /// Keeps the last verdicts in the progress file and returns what went wrong, at most one
  /// line about reading it and one about writing it. Failing to save is not fatal: the
  /// verdicts were printed all the same.
  static func record(_ report: CheckReport, root: URL) -> [String] {
    let store = ProgressStore(root: root)
    var (progress, problem) = store.read()
    var problems = problem.map { [$0] } ?? []
    for exercise in report.chapters.flatMap({ $0.exercises + $0.leftOutElsewhere }) {
      progress[exercise.id].verdict = exercise.verdict
      // The file as graded, so `status` can tell when it changed since.
      progress[exercise.id].digest = Digest.ofFile(root.appendingPathComponent(exercise.file))
    }
    do {
      try store.save(progress)
    } catch {
      problems = [
        "workbook: progress not saved: \(error.description). "
          + "The verdicts above are still right; only the record of them is missing."
      ]
    }
    return problems
  }

  /// After a single exercise passed: the next exercise in workbook order (wrapping
  /// around) whose last check did not pass; nil when every one passed.
  static func nextAfterPass(
    _ selection: [(chapter: Chapter, exercises: [Exercise])], in workbook: Workbook, root: URL
  ) -> NextStep? {
    guard let current = selection.first?.exercises.first,
      let index = workbook.exercises.firstIndex(where: { $0.id == current.id })
    else { return nil }
    let progress = ProgressStore(root: root).load(notice: { _ in })
    let order = workbook.exercises[(index + 1)...] + workbook.exercises[..<index]
    guard let next = order.first(where: { progress[$0.id].verdict != .passed }),
      let chapter = workbook.chapter(containing: next)
    else { return nil }
    return NextStep(
      id: next.id, name: next.name, file: chapter.starterPath(next), hint: hintCommand(next))
  }

  /// "chapter 2 — make check CHAPTER=2" after a single chapter that has a successor.
  static func nextChapter(
    after selection: [(chapter: Chapter, exercises: [Exercise])], in workbook: Workbook
  ) -> String? {
    guard selection.count == 1, let current = selection.first?.chapter,
      let index = workbook.chapters.firstIndex(where: { $0.number == current.number }),
      index + 1 < workbook.chapters.count
    else { return nil }
    let next = workbook.chapters[index + 1]
    return "chapter \(next.number) \(next.title) — make check CHAPTER=\(next.number)"
  }

  // MARK: hint

  static func hint(_ invocation: Invocation, root: URL) throws(WorkbookError) -> Int32 {
    let workbook = try MetadataLoader.load(root: root)
    let id = invocation.exercise ?? ""
    guard let exercise = workbook.exercise(id: id),
      let chapter = workbook.chapter(containing: exercise)
    else {
      throw .usage("workbook: there is no exercise \(id). \(validExercises(workbook))")
    }
    let store = ProgressStore(root: root)
    var (progress, problem) = store.read()
    if invocation.allHints {
      Output.out(Hints.revealed(exercise, in: chapter, progress: progress))
      if let problem { Output.err(problem) }
      return 0
    }
    let text = Hints.reveal(exercise, in: chapter, progress: &progress)
    Output.out(text)
    do {
      try store.save(progress)
      if let problem { Output.err(problem) }
    } catch {
      Output.err(
        "workbook: progress not saved: \(error.description). "
          + "The next `make hint` shows this hint again.")
    }
    return 0
  }

  // MARK: reset

  static func reset(_ invocation: Invocation, root: URL) throws(WorkbookError) -> Int32 {
    let workbook = try MetadataLoader.load(root: root)
    guard let id = invocation.exercise else {
      throw .usage(
        "workbook reset: say which exercise, e.g. `make reset EXERCISE=1.3`. "
          + validExercises(workbook))
    }
    guard let exercise = workbook.exercise(id: id),
      let chapter = workbook.chapter(containing: exercise)
    else {
      throw .usage("workbook: there is no exercise \(id). \(validExercises(workbook))")
    }
    Output.out(resetMessage(try StarterReset.reset(exercise, in: chapter, root: root), exercise))
    return 0
  }

  // MARK: fingerprint

  static func fingerprint(root: URL) throws(WorkbookError) -> Int32 {
    let workbook = try MetadataLoader.load(root: root)
    let url = root.appendingPathComponent(MetadataLoader.fileName)
    guard let text = try? String(contentsOf: url, encoding: .utf8) else {
      throw .failure("cannot read \(url.path)")
    }
    var digests: [String: String] = [:]
    var paths: [String: String] = [:]
    for chapter in workbook.chapters {
      for exercise in chapter.exercises {
        let path = chapter.starterPath(exercise)
        paths[exercise.id] = path
        if let digest = Digest.ofFile(root.appendingPathComponent(path)) {
          digests[exercise.id] = digest
        } else {
          Output.err("workbook: \(path) is missing; \(exercise.id) keeps its starterDigest")
          digests[exercise.id] = exercise.starterDigest
        }
      }
    }
    let (rewritten, changes) = try Fingerprint.rewrite(text, digests: digests)
    for change in changes {
      let old = change.old.isEmpty ? "(empty)" : change.old
      Output.out("\(change.exerciseID) \(paths[change.exerciseID] ?? ""): \(old) → \(change.new)")
    }
    guard !changes.isEmpty else {
      Output.out("workbook.json: all \(digests.count) starter digests are up to date")
      return 0
    }
    let temporary = root.appendingPathComponent(".workbook.json.\(getpid()).tmp")
    do {
      try Data(rewritten.utf8).write(to: temporary)
    } catch {
      throw .failure("cannot write \(temporary.path): \(error.localizedDescription)")
    }
    guard rename(temporary.path, url.path) == 0 else {
      try? FileManager.default.removeItem(at: temporary)
      throw .failure("cannot replace workbook.json: \(String(cString: strerror(errno)))")
    }
    Output.out("workbook.json: \(changes.count) of \(digests.count) starter digests updated")
    return 0
  }

  // MARK: verify

  static func verify(
    _ invocation: Invocation, root: URL, terminal: Terminal
  ) throws(WorkbookError)
    -> Int32
  {
    if let number = invocation.chapter {
      let workbook = try MetadataLoader.load(root: root)
      guard workbook.chapter(number: number) != nil else {
        throw .usage("workbook: there is no chapter \(number). \(validChapters(workbook))")
      }
    }
    let verifier = Verifier(
      root: root, chapterNumber: invocation.chapter, timeout: invocation.timeout,
      jobs: invocation.jobs, terminal: terminal, status: StatusLine(enabled: terminal.progress))
    let (passed, failed) = try verifier.run { Output.out($0) }
    Output.out("verify: \(passed) passed, \(failed) failed")
    return failed == 0 ? 0 : 1
  }

  // MARK: mistakes

  static func mistakes(
    _ invocation: Invocation, root: URL, terminal: Terminal
  ) throws(WorkbookError)
    -> Int32
  {
    let workbook = try MetadataLoader.load(root: root)
    let selection = try select(invocation, in: workbook)
    let checker = MistakeChecker(
      root: root, timeout: invocation.timeout, jobs: invocation.jobs,
      status: StatusLine(enabled: terminal.progress), repeats: invocation.repeats,
      only: invocation.only, noteRules: workbook.notes ?? [])
    let (passed, failed) = try checker.run(selection) { result in
      Output.out(Verifier.line(result, terminal: terminal).joined(separator: "\n"))
    }
    if passed + failed == 0 {
      Output.out(terminal.paint("no mistakes or alternatives listed for the selection", .dim))
    }
    Output.out("mistakes: \(passed) passed, \(failed) failed")
    return failed == 0 ? 0 : 1
  }

  // MARK: watch

  static func watch(
    _ invocation: Invocation, root: URL, terminal: Terminal
  ) throws(WorkbookError)
    -> Int32
  {
    var workbook = try MetadataLoader.load(root: root)
    var chapter: Chapter
    if let number = invocation.chapter {
      guard let found = workbook.chapter(number: number) else {
        throw .usage("workbook: there is no chapter \(number). \(validChapters(workbook))")
      }
      chapter = found
    } else {
      guard let first = currentChapter(workbook, root: root) else {
        throw .metadata("workbook.json lists no chapters")
      }
      chapter = first
    }
    let watcher = Watcher(folder: root.appendingPathComponent("Chapters"))
    var snapshot = watcher.snapshot()
    var exercises = chapter.exercises
    var saved: [String] = []
    // Single keys while it waits, only when a person is at a terminal.
    let keys = KeyInput()
    defer { keys?.restore() }
    var focus: String?
    var lastReport: ChapterReport?
    while true {
      if terminal.progress || terminal.color {
        FileHandle.standardOutput.write(Data("\u{1B}[H\u{1B}[2J".utf8))
      }
      if !saved.isEmpty {
        let ids = exercises.map(\.id).joined(separator: ", ")
        Output.out(
          "saved \(saved.map { "Chapters/\($0)" }.joined(separator: ", ")): re-grading \(ids)")
      }
      var single = invocation
      single.chapter = chapter.number
      single.exercise = nil
      let report = try grade(
        [(chapter, exercises)], root: root, invocation: single, terminal: terminal,
        notes: workbook.notes ?? [])
      let problems = record(report, root: root)
      Output.out(TextRenderer(terminal: terminal, root: root).render(report))
      problems.forEach(Output.err)
      // The standing of every exercise of the chapter, for the keys (a save re-grades some).
      let standing = chapterStanding(chapter, root: root)
      focus = WatchFocus.after(standing, current: focus)
      lastReport = standing
      let scope =
        invocation.chapter == nil ? "a file under Chapters/" : "a file of chapter \(chapter.number)"
      Output.out(
        terminal.paint(
          "\nwatching Chapters/\(invocation.chapter == nil ? "" : chapter.folder + "/") — save "
            + "\(scope) to re-check it; "
            + (keys == nil ? "Ctrl-C stops" : WatchKey.prompt(focus: focus)),
          .dim))

      // Wait for a change that matters, then for the files to settle (editors save in
      // several steps). With a chapter chosen, files of other chapters do not count.
      let watched = invocation.chapter.map { _ in chapter.folder }
      func relevant(_ paths: [String]) -> [String] {
        guard let watched else { return paths }
        return paths.filter { $0.hasPrefix(watched + "/") }
      }
      var changed: [String] = []
      var regradeNow = false
      while changed.isEmpty, !regradeNow {
        if let keys {
          if let typed = keys.key(within: .milliseconds(500)), let key = WatchKey(typed) {
            switch key {
            case .quit:
              keys.restore()
              Output.err("watch: stopped")
              return 0
            case .recheck:
              regradeNow = true
            case .reset:
              if let focus, let exercise = workbook.exercise(id: focus) {
                do {
                  Output.out(
                    resetMessage(
                      try StarterReset.reset(exercise, in: chapter, root: root), exercise))
                } catch {
                  Output.err(error.description)
                }
              }
              regradeNow = true
            case .hint:
              if let focus, let exercise = workbook.exercise(id: focus) {
                Output.out(revealNextHint(exercise, in: chapter, root: root))
              }
            case .list:
              if let lastReport { Output.out(standingList(lastReport, focus: focus)) }
            case .next:
              if let current = focus, let lastReport {
                let (target, message) = WatchFocus.next(after: current, in: lastReport)
                if let target { focus = target }
                Output.out(message)
              }
            }
            if !regradeNow {
              Output.out(terminal.paint(WatchKey.prompt(focus: focus), .dim))
            }
          }
        } else {
          Thread.sleep(forTimeInterval: 0.5)
        }
        let next = watcher.snapshot()
        changed = relevant(Watcher.changes(from: snapshot, to: next))
        snapshot = next
      }
      while true {
        Thread.sleep(forTimeInterval: 0.3)
        let next = watcher.snapshot()
        let more = relevant(Watcher.changes(from: snapshot, to: next))
        snapshot = next
        if more.isEmpty { break }
        changed += more
      }
      if let reloaded = try? MetadataLoader.load(root: root) { workbook = reloaded }
      if invocation.chapter == nil,
        let touched = changed.lazy.compactMap({ Watcher.chapter(of: $0, in: workbook) }).first
      {
        chapter = touched
      } else if let same = workbook.chapter(number: chapter.number) {
        chapter = same
      }
      saved = Array(Set(changed.filter { $0.hasPrefix(chapter.folder + "/") })).sorted()
      exercises = Watcher.exercises(affectedBy: saved, in: chapter)
    }
  }

  /// The first chapter with an exercise not yet passed (from the progress file), else the
  /// first chapter.
  static func currentChapter(_ workbook: Workbook, root: URL) -> Chapter? {
    let progress = ProgressStore(root: root).load(notice: { _ in })
    return workbook.chapters.first { chapter in
      chapter.exercises.contains { progress[$0.id].verdict != .passed }
    } ?? workbook.chapters.first
  }

  /// Every exercise of `chapter` with its last verdict, from the progress file.
  static func chapterStanding(_ chapter: Chapter, root: URL) -> ChapterReport {
    let progress = ProgressStore(root: root).load(notice: { _ in })
    return ChapterReport(
      number: chapter.number, title: chapter.title, folder: chapter.folder, compiled: true,
      notes: [],
      exercises: chapter.exercises.map { exercise in
        ExerciseReport(
          id: exercise.id, name: exercise.name,
          file: chapter.sourcePath(exercise, source: .learner),
          verdict: progress[exercise.id].verdict ?? .notStarted, details: [], hint: nil,
          challenge: exercise.challenge)
      })
  }

  /// `l` in watch: one line per exercise, the one in focus marked.
  static func standingList(_ report: ChapterReport, focus: String?) -> String {
    report.exercises.map { exercise in
      "\(exercise.id == focus ? "→" : " ") \(exercise.id)  \(exercise.displayName): "
        + exercise.verdict.rawValue
    }.joined(separator: "\n")
  }

  static func resetMessage(_ outcome: StarterReset.Outcome, _ exercise: Exercise) -> String {
    switch outcome {
    case .unchanged(let path):
      "\(exercise.id) \(exercise.name): \(path) already is the starter as shipped."
    case .restored(let path, let backup):
      "\(exercise.id) \(exercise.name): \(path) is the starter as shipped again."
        + (backup.map { " Your version is kept at \($0)." } ?? "")
    }
  }

  /// The next hint of `exercise`, revealed and remembered, as `make hint` shows it.
  static func revealNextHint(_ exercise: Exercise, in chapter: Chapter, root: URL) -> String {
    let store = ProgressStore(root: root)
    var (progress, _) = store.read()
    let text = Hints.reveal(exercise, in: chapter, progress: &progress)
    try? store.save(progress)
    return text
  }

  // MARK: interrupts

  nonisolated(unsafe) private static var interruptSources: [DispatchSourceSignal] = []

  /// On Ctrl-C (SIGINT) or SIGTERM: stop every child and everything it started, erase the
  /// status line, wait for a progress save in progress to finish, say so and exit with
  /// 128 + the signal (130, 143). `watch` treats Ctrl-C as its normal stop: status 0.
  public static func installInterruptHandlers(arguments: [String]) {
    let watching = arguments.contains("watch")
    for signalNumber in [SIGINT, SIGTERM] {
      signal(signalNumber, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
      source.setEventHandler {
        ChildProcess.terminateAll()
        // Let the waiting threads notice and remove their temporary files.
        Thread.sleep(forTimeInterval: 0.2)
        // Put back what the runner changed (the mistakes' scratch tree).
        InterruptCleanup.runAll()
        if isatty(STDERR_FILENO) == 1 {
          FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
        }
        ProgressStore.whileNotSaving {
          if watching, signalNumber == SIGINT {
            Output.err("watch: stopped")
            exit(0)
          }
          Output.err(
            signalNumber == SIGINT
              ? "workbook: interrupted (Ctrl-C); stopped every test and build it had started"
              : "workbook: terminated (SIGTERM); stopped every test and build it had started")
          exit(128 + signalNumber)
        }
      }
      source.resume()
      interruptSources.append(source)
    }
  }
}
