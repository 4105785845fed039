import Foundation

/// One exercise's suite, run in a process of its own.
public struct SuiteRun: Sendable, Equatable {
  public var outcome: ProcessOutcome
  public var events: TestEventLog

  public init(outcome: ProcessOutcome, events: TestEventLog) {
    self.outcome = outcome
    self.events = events
  }
}

/// What the classifier needs to know besides the run itself.
public struct GradingContext: Sendable {
  /// The workbook root as an absolute path (paths under it are shown relative to it).
  public var root: String
  /// "Chapters" or "Solutions": where crash frames point the learner to.
  public var sourceFolder: String
  public var suite: String
  public var testModule: String
  /// True when the graded file is byte-identical to the shipped starter.
  public var untouchedStarter: Bool
  /// The graded file, relative to the root.
  public var file: String

  public init(
    root: String, sourceFolder: String, suite: String, testModule: String,
    untouchedStarter: Bool, file: String
  ) {
    self.root = root
    self.sourceFolder = sourceFolder
    self.suite = suite
    self.testModule = testModule
    self.untouchedStarter = untouchedStarter
    self.file = file
  }

  /// `path` relative to the root when it is under it.
  public func relative(_ path: String) -> String {
    for base in [root, URL(fileURLWithPath: root).resolvingSymlinksInPath().path] {
      let prefix = base.hasSuffix("/") ? base : base + "/"
      if path.hasPrefix(prefix) { return String(path.dropFirst(prefix.count)) }
    }
    return path
  }
}

/// Turns a suite run into a verdict, in this precedence: a blocked concurrency pool → failed
/// (at the time limit too); killed at the time limit → never resumed (headed by a failure a
/// test recorded, naming its cause, before the run stuck); crash → crashed; a
/// "Never resumed:" issue → never resumed; any other issue →
/// failed (or not started, for an untouched starter); no test ran → failed (a metadata
/// error); otherwise passed. ("Does not compile" is decided before anything runs.)
public enum Classifier {
  public static let neverResumedMarker = "Never resumed:"
  /// Opens the issue WorkbookTesting records when the code blocked the concurrency pool's
  /// last free thread (keep in step with `poolBlockedMarker` there). It headlines over
  /// "never resumed": a blocked thread is why the other waits did not end.
  public static let poolBlockedMarker = "Blocked a thread of the concurrency pool:"
  /// The same for the main actor (`mainActorBlockedMarker` there).
  public static let mainActorBlockedMarker = "Blocked the main actor:"
  static let blockedMarkers = [poolBlockedMarker, mainActorBlockedMarker]

  public static func grade(_ run: SuiteRun, _ context: GradingContext) -> Grade {
    let events = run.events
    let crash = CrashReport.parse(run.outcome.stderr)

    // A crash explains a time-out too: the crash reporter can hang after two tests crash
    // at once, and the process then runs into the limit.
    let issues = events.issuesByHeadline
    func isBlocked(_ text: String) -> Bool { blockedMarkers.contains { text.hasPrefix($0) } }
    let blocked = issues.first { issue in issue.texts.contains(where: isBlocked) }

    // A run stopped after a watchdog announced a blocked thread that never came back.
    if case .stoppedAfterBlocking(let seconds) = run.outcome.termination, !crash.showsCrash {
      let stopped =
        "the tests were then stuck, so the runner stopped them after "
        + "\(formatSeconds(seconds)): the blocked thread never came back"
      if let blocked {
        return Grade(
          .failed, blocked.texts.filter(isBlocked) + locate(blocked, events, context) + [stopped])
      }
      if let announced = BlockedAnnouncement.first(in: run.outcome.stderr) {
        var details = [announced.finding]
        if !announced.test.isEmpty { details.append("test \(announced.test)") }
        return Grade(.failed, details + [stopped])
      }
    }

    if case .timedOut(let seconds) = run.outcome.termination, !crash.showsCrash {
      if let blocked {
        var details = blocked.texts.filter(isBlocked)
        details.append(contentsOf: locate(blocked, events, context))
        details.append(
          "the tests were then still running after \(formatSeconds(seconds)), so the runner "
            + "stopped them: the blocked thread never came back")
        return Grade(.failed, details)
      }
      // Blocked so thoroughly that the waiting test never ran again to say so.
      if let announced = BlockedAnnouncement.first(in: run.outcome.stderr) {
        var details = [announced.finding]
        if !announced.test.isEmpty {
          details.append("test \(announced.test)")
        } else if let running = events.describeRunningTests("still running:") {
          details.append(running)
        }
        details.append(
          "the tests were then still running after \(formatSeconds(seconds)), so the runner "
            + "stopped them: blocked threads held the whole pool, so not even the test that "
            + "saw it could run again")
        return Grade(.failed, details)
      }
      var details: [String] = []
      // A test that failed, naming its cause, before the run stuck says more than the tests
      // still running: a mistake that floods the machine (polling in a tight loop) fails
      // the test of that very path first, then holds up the rest.
      if !context.untouchedStarter,
        let cause = issues.first(where: { issue in
          issue.namesCause && !issue.texts.contains { $0.hasPrefix(neverResumedMarker) }
        })
      {
        details.append(contentsOf: locate(cause, events, context))
        details.append(contentsOf: cause.texts.filter { $0 != "Issue recorded" })
        details.append(
          "after that, the tests were still running after \(formatSeconds(seconds)), so the "
            + "runner stopped them")
      } else {
        details.append(
          "the tests were still running after \(formatSeconds(seconds)), so the runner stopped "
            + "them")
      }
      if let running = events.describeRunningTests("still running:") { details.append(running) }
      if let leaked = crash.leakedContinuation { details.append("the runtime said: \(leaked)") }
      details.append(
        "this usually means a path that never resumes the continuation, "
          + "or a thread blocked waiting for a callback that never comes")
      return Grade(.neverResumed, details)
    }

    switch run.outcome.termination {
    case .signalled, .stoppedAfterCrash: return crashed(run, crash, context)
    case .exited, .timedOut, .stoppedAfterBlocking: break
    }
    if crash.showsCrash {
      return crashed(run, crash, context)
    }

    if let blocked, !context.untouchedStarter {
      var details = blocked.texts.filter(isBlocked)
      details.append(contentsOf: locate(blocked, events, context))
      return Grade(.failed, details)
    }
    func isNeverResumed(_ issue: TestEventLog.Issue) -> Bool {
      issue.texts.contains { $0.hasPrefix(neverResumedMarker) }
    }
    if let issue = issues.first(where: isNeverResumed) {
      let waited = issue.texts.filter { $0.hasPrefix(neverResumedMarker) }
      // A failure the same test saw before its wait ran out is the cause; the wait that
      // never ended is what followed from it.
      if !context.untouchedStarter,
        let cause = events.earlierIssues(inTestOf: issue).first(where: {
          $0.namesCause && !isNeverResumed($0)
        })
      {
        var details = locate(cause, events, context)
        details.append(contentsOf: cause.texts.filter { $0 != "Issue recorded" })
        details.append(
          "after that, the test's wait did not end either: "
            + waited.joined(separator: " ").dropFirst(neverResumedMarker.count)
            .trimmingCharacters(in: .whitespaces))
        return Grade(.failed, details)
      }
      var details = waited
      details.append(contentsOf: locate(issue, events, context))
      if let leaked = crash.leakedContinuation { details.append("the runtime said: \(leaked)") }
      return Grade(.neverResumed, details)
    }

    if let issue = issues.first {
      if context.untouchedStarter {
        return Grade(.notStarted, ["open \(context.file) and find the TODO"])
      }
      var details = locate(issue, events, context)
      details.append(contentsOf: issue.texts.filter { $0 != "Issue recorded" })
      if issue.texts.contains(where: { $0.hasPrefix("Caught error:") }),
        let title = events.test(issue.testID)?.title,
        let thrown = ThrownExplanation.find(in: run.outcome.stderr, test: title)
      {
        details.append(thrown.detail)
      }
      if issue.texts.contains(where: { $0.contains("was expected but none was thrown") }),
        let expected = expectedError(at: issue)
      {
        details.append(
          "the test expected your code to throw \(expected) here, and it finished without an "
            + "error instead")
      }
      let failingTests = Set(events.issues.compactMap(\.testID))
      if failingTests.count > 1 {
        let others = failingTests.count - 1
        details.append("(and \(others) more failing test\(others == 1 ? "" : "s"))")
      }
      return Grade(.failed, details)
    }

    if events.functionsStarted == 0 {
      return Grade(
        .failed,
        [
          "no tests matched suite \(context.suite) in \(context.testModule)",
          "this is a workbook error: check \"suite\" in workbook.json",
        ] + stderrTail(run.outcome.stderr))
    }

    if case .exited(let status) = run.outcome.termination, status != 0 {
      return Grade(
        .failed,
        ["the test process exited with status \(status) without reporting a failure"]
          + stderrTail(run.outcome.stderr))
    }
    return Grade(.passed)
  }

  /// The error a failed `#expect(throws: X)` wanted, read from the test's source: Swift
  /// Testing's message ("an error was expected but none was thrown") does not name it.
  static func expectedError(at issue: TestEventLog.Issue) -> String? {
    guard let path = issue.filePath, let line = issue.line, line > 0,
      let source = try? String(contentsOfFile: path, encoding: .utf8)
    else { return nil }
    let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
    guard line <= lines.count else { return nil }
    // The macro may span a few lines; its `throws:` argument starts on or after `line`.
    let text = lines[(line - 1)..<min(lines.count, line + 2)].joined(separator: " ")
    let pattern = #/#expect\(\s*throws:\s*(?<error>.+?)\s*(?:,|\)\s*\{|\)\s*$)/#
    guard let match = text.firstMatch(of: pattern) else { return nil }
    let error = String(match.error)
    return error.hasSuffix(".self") ? "an error of type \(error.dropLast(5))" : error
  }

  private static func crashed(
    _ run: SuiteRun, _ crash: CrashReport, _ context: GradingContext
  )
    -> Grade
  {
    var details: [String] = []
    if crash.isIsolationTrap {
      details.append(
        "the runtime stopped the tests: a closure isolated to the main actor was called "
          + "on a background thread (Swift 6 checks isolation at run time)")
    } else if crash.isSyncOnItsOwnQueue {
      details.append(
        "libdispatch stopped the tests: DispatchQueue.sync was called on the serial queue the "
          + "code was already running on, a wait that could never end")
    } else if crash.isSemaphoreFreedInUse {
      details.append(
        "libdispatch stopped the tests: a DispatchSemaphore was freed while still in use, its "
          + "count below the value it was created with (more waits than signals)")
    } else if crash.isReleasedWhileSuspended {
      details.append(
        "libdispatch stopped the tests: a dispatch source or queue was released while "
          + "suspended or never activated")
    } else if let message = crash.fatalMessage {
      details.append("the runtime stopped the tests: \(message)")
    } else if case .signalled(let signal) = run.outcome.termination {
      details.append("the test process was killed by \(CrashReport.signalName(signal))")
    } else if let reason = crash.crashReason {
      details.append("the test process crashed: \(reason)")
    }
    // When the crash happened on the test's own task, its backtrace reaches the test
    // function and names it for certain; otherwise every test still running is a suspect.
    if let frame = firstFrame(of: crash, under: "Tests", context), let path = frame.path {
      let line = frame.line.map { ":\($0)" } ?? ""
      let test = frame.symbol.replacing(#/^((implicit )?closure #\d+ in )+/#, with: "")
      details.append("while running \(test) at \(context.relative(path))\(line)")
    } else if let running = run.events.describeRunningTests("while running") {
      details.append(running)
    }
    if let frame = learnerFrame(of: crash, context), let path = frame.path {
      let line = frame.line.map { ":\($0)" } ?? ""
      details.append("at \(context.relative(path))\(line) (in \(frame.symbol))")
    }
    if let meaning = meaning(of: crash) { details.append("this usually means \(meaning)") }
    return Grade(.crashed, details)
  }

  /// The innermost crashed-thread frame in a file under `folder` (relative to the root),
  /// whether the backtrace spells the root as given or with symbolic links resolved.
  private static func firstFrame(
    of crash: CrashReport, under folder: String, _ context: GradingContext
  ) -> CrashReport.Frame? {
    let resolvedRoot = URL(fileURLWithPath: context.root).resolvingSymlinksInPath().path
    return crash.firstFrame(under: "\(context.root)/\(folder)")
      ?? crash.firstFrame(under: "\(resolvedRoot)/\(folder)")
  }

  /// The innermost crashed-thread frame in the learner's code: in a file under the source
  /// folder, or filed by the compiler under no real file (`<stdin>`) but named after
  /// something the graded file declares, which it is then attributed to.
  private static func learnerFrame(
    of crash: CrashReport, _ context: GradingContext
  ) -> CrashReport.Frame? {
    let resolvedRoot = URL(fileURLWithPath: context.root).resolvingSymlinksInPath().path
    let file = "\(context.root)/\(context.file)"
    let source = context.file.isEmpty ? nil : try? String(contentsOfFile: file, encoding: .utf8)
    return crash.firstFrame(
      under: [
        "\(context.root)/\(context.sourceFolder)", "\(resolvedRoot)/\(context.sourceFolder)",
      ],
      orDeclaredIn: source, file: file)
  }

  /// What a crash usually means, in the learner's terms.
  static func meaning(of crash: CrashReport) -> String? {
    if crash.isIsolationTrap { return "a main-actor closure ran on a background thread" }
    if crash.isDoubleResume {
      return "a continuation was resumed twice: the callback ran twice, one handler resumed on "
        + "two paths (in a `defer` and in the body, say), or a stored continuation was resumed "
        + "without being taken out, so a later report or a cancellation found it again"
    }
    if crash.isSyncOnItsOwnQueue {
      return "a callback hopped to a queue with `sync` while it already ran on that queue: "
        + "legacy code may call back on any queue, the main one included, so a handler cannot "
        + "assume it runs elsewhere"
    }
    if crash.isSemaphoreFreedInUse {
      return "a thread waited on a semaphore for something asynchronous, and the semaphore "
        + "went away with that wait still counted; while such a wait lasts its thread is "
        + "blocked, which async code must not do"
    }
    if crash.isReleasedWhileSuspended {
      return "a timer or another dispatch source was let go while suspended (or before it was "
        + "ever activated): libdispatch refuses to free one in that state, so one that is "
        + "done with must be cancelled, and resumed if it was suspended, before its last "
        + "reference goes"
    }
    guard let message = crash.fatalMessage else { return nil }
    if message.contains("Recursive call to lock") {
      return "a lock was taken again by the thread that already held it: code run inside "
        + "withLock (a framework call that answers at once, a delegate method, a caller "
        + "resumed there) came back to the same lock; call out only after the lock is released"
    }
    if message.contains("Unexpectedly found nil") {
      return "a force-unwrapped optional (`!`) was nil"
    }
    if message.contains("Index out of range") { return "an array was indexed past its end" }
    return nil
  }

  /// "in test() at Tests/…/File.swift:12".
  private static func locate(
    _ issue: TestEventLog.Issue, _ events: TestEventLog, _ context: GradingContext
  ) -> [String] {
    let name = events.test(issue.testID)?.quoted
    var location = ""
    if let path = issue.filePath {
      location = " at \(context.relative(path))" + (issue.line.map { ":\($0)" } ?? "")
    }
    guard let name else { return location.isEmpty ? [] : [String(location.dropFirst())] }
    return ["\(name)\(location)"]
  }

  static func stderrTail(_ stderr: String, lines count: Int = 5) -> [String] {
    let lines = stderr.split(separator: "\n").map(String.init).filter {
      !$0.trimmingCharacters(in: .whitespaces).isEmpty
    }
    return lines.suffix(count).map { "  \($0)" }
  }

  /// 30 → "30 s", 2.5 → "2.5 s".
  public static func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
  }
}
