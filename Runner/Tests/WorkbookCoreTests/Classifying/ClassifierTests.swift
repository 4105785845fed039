import Foundation
import Testing

@testable import WorkbookCore

@Suite struct CrashReportTests {
  @Test(arguments: ["double-resume.stderr.txt", "double-resume-all-threads.stderr.txt"])
  func readsADoubleResume(sample: String) throws {
    let report = CrashReport.parse(try Fixtures.sample(sample))
    #expect(
      report.fatalMessage
        == "SWIFT TASK CONTINUATION MISUSE: firstDelivery(_:) tried to resume its continuation more than once, returning 2!"
    )
    #expect(report.crashReason == "Illegal instruction")
    #expect(report.isDoubleResume)
    #expect(!report.isIsolationTrap)
    let frame = try #require(report.firstFrame(under: "/ROOT/Chapters"))
    #expect(frame.path == "/ROOT/Chapters/01-Basics/05-CalledTwice.swift")
    #expect(frame.line == 7)
    #expect(frame.symbol == "closure #1 in closure #1 in firstDelivery(_:)")
  }

  @Test(arguments: ["isolation-trap.stderr.txt", "isolation-trap-all-threads.stderr.txt"])
  func recognisesTheIsolationTrapFromTheBacktraceAlone(sample: String) throws {
    let report = CrashReport.parse(try Fixtures.sample(sample))
    #expect(report.fatalMessage == nil)
    #expect(report.isIsolationTrap)
    let frame = try #require(report.firstFrame(under: "/ROOT/Chapters"))
    #expect(frame.path == "/ROOT/Chapters/01-Basics/06-MainActorModel.swift")
    #expect(frame.line == nil)
    #expect(frame.symbol == "closure #1 in Model.load()")
  }

  @Test func recognisesASemaphoreFreedInUse() throws {
    let report = CrashReport.parse(try Fixtures.sample("semaphore-freed-in-use.stderr.txt"))
    #expect(report.isSemaphoreFreedInUse)
    #expect(!report.isDoubleResume && !report.isIsolationTrap)
    let meaning = Classifier.meaning(of: report) ?? ""
    #expect(meaning.hasPrefix("a thread waited on a semaphore"))
    #expect(
      !CrashReport.parse(try Fixtures.sample("double-resume.stderr.txt")).isSemaphoreFreedInUse)
  }

  @Test func recognisesASourceReleasedWhileSuspended() throws {
    let report = CrashReport.parse(try Fixtures.sample("released-while-suspended.stderr.txt"))
    #expect(report.isReleasedWhileSuspended)
    #expect(!report.isSemaphoreFreedInUse && !report.isSyncOnItsOwnQueue && !report.isDoubleResume)
    let meaning = Classifier.meaning(of: report) ?? ""
    #expect(meaning.hasPrefix("a timer or another dispatch source was let go while suspended"))
    #expect(
      !CrashReport.parse(try Fixtures.sample("semaphore-freed-in-use.stderr.txt"))
        .isReleasedWhileSuspended)
  }

  @Test func recognisesASyncOnTheQueueItRunsOn() throws {
    let report = CrashReport.parse(try Fixtures.sample("sync-on-its-own-queue.stderr.txt"))
    #expect(report.isSyncOnItsOwnQueue)
    #expect(!report.isSemaphoreFreedInUse && !report.isDoubleResume && !report.isIsolationTrap)
    let meaning = Classifier.meaning(of: report) ?? ""
    #expect(meaning.hasPrefix("a callback hopped to a queue with `sync`"))
    #expect(!CrashReport.parse(try Fixtures.sample("double-resume.stderr.txt")).isSyncOnItsOwnQueue)
  }

  @Test func findsTheLeakedContinuationLine() throws {
    let report = CrashReport.parse(try Fixtures.sample("deadline.stderr.txt"))
    #expect(!report.showsCrash)
    #expect(
      report.leakedContinuation?.contains("deliveredValue(_:) leaked its continuation") == true)
  }

  @Test func stripsTheFatalErrorPrefix() {
    let report = CrashReport.parse(
      "Swift/Optional.swift:12: Fatal error: Unexpectedly found nil while unwrapping an Optional value"
    )
    #expect(report.fatalMessage == "Unexpectedly found nil while unwrapping an Optional value")
    #expect(Classifier.meaning(of: report) == "a force-unwrapped optional (`!`) was nil")
  }
}

@Suite struct ClassifierTests {
  @Test func namesTheTestFromTheBacktraceWhenTheCrashHappenedOnItsTask() throws {
    let grade = Classifier.grade(
      try Fixtures.run("double-resume-in-test", termination: .signalled(4)),
      sampleContext(
        file: "Chapters/01-Callbacks/03-OptionalPair.swift", suite: "OptionalPairTests"))
    #expect(grade.verdict == .crashed)
    #expect(
      grade.details == [
        "the runtime stopped the tests: SWIFT TASK CONTINUATION MISUSE: encode(_:using:reportWarning:) tried to resume its continuation more than once, throwing approximateMatch!",
        "while running OptionalPairTests.valueAndError(script:) at Tests/01-CallbacksTests/03-OptionalPairTests.swift:72",
        "at Chapters/01-Callbacks/03-OptionalPair.swift:30 (in closure #1 in closure #1 in encode(_:using:reportWarning:))",
        "this usually means a continuation was resumed twice: the callback ran twice, one handler resumed on two paths (in a `defer` and in the body, say), or a stored continuation was resumed without being taken out, so a later report or a cancellation found it again",
      ])
  }

  /// The "at" line names the learner's function, never a frame in Tests/ or Support/ (the
  /// crashed thread passes through LegacyKit, the test and WorkbookTesting), in the
  /// learner's tree and in the solutions tree `workbook mistakes` builds.
  @Test(arguments: ["Chapters", "Solutions"])
  func theCrashLocationIsTheLearnersFunction(_ folder: String) throws {
    var run = try Fixtures.run("double-resume-in-test", termination: .signalled(4))
    run.outcome.stderr = run.outcome.stderr.replacingOccurrences(
      of: "/ROOT/Chapters/", with: "/ROOT/\(folder)/")
    var context = sampleContext(
      file: "\(folder)/01-Callbacks/03-OptionalPair.swift", suite: "OptionalPairTests")
    context.sourceFolder = folder
    let grade = Classifier.grade(run, context)
    let at = grade.details.filter { $0.hasPrefix("at ") }
    #expect(
      at == [
        "at \(folder)/01-Callbacks/03-OptionalPair.swift:30 (in closure #1 in closure #1 in encode(_:using:reportWarning:))"
      ])
    // Without a frame in the learner's folder there is no "at" line rather than a wrong one.
    run.outcome.stderr = run.outcome.stderr.replacingOccurrences(
      of: "/ROOT/\(folder)/", with: "/ROOT/Elsewhere/")
    let elsewhere = Classifier.grade(run, context)
    #expect(!elsewhere.details.contains { $0.hasPrefix("at ") })
    #expect(!elsewhere.details.contains { $0.contains("Support/") })
  }

  @Test func gradesADoubleResumeAsCrashed() throws {
    let grade = Classifier.grade(
      try Fixtures.run("double-resume", termination: .signalled(4)), sampleContext())
    #expect(grade.verdict == .crashed)
    #expect(
      grade.details == [
        "the runtime stopped the tests: SWIFT TASK CONTINUATION MISUSE: firstDelivery(_:) tried to resume its continuation more than once, returning 2!",
        "while running test resumesOnceWhenTheCallbackFiresTwice()",
        "at Chapters/01-Basics/05-CalledTwice.swift:7 (in closure #1 in closure #1 in firstDelivery(_:))",
        "this usually means a continuation was resumed twice: the callback ran twice, one handler resumed on two paths (in a `defer` and in the body, say), or a stored continuation was resumed without being taken out, so a later report or a cancellation found it again",
      ])
  }

  @Test func gradesTheIsolationTrapAsCrashedAndSaysSoInWords() throws {
    let grade = Classifier.grade(
      try Fixtures.run("isolation-trap", termination: .signalled(4)), sampleContext())
    #expect(grade.verdict == .crashed)
    #expect(grade.details.first?.contains("isolated to the main actor") == true)
    #expect(grade.details.contains("while running test loadsTheValue()"))
    #expect(
      grade.details.contains(
        "at Chapters/01-Basics/06-MainActorModel.swift (in closure #1 in Model.load())"))
    #expect(
      grade.details.last == "this usually means a main-actor closure ran on a background thread")
  }

  @Test func gradesACrashMessageEvenWithoutASignal() throws {
    var run = try Fixtures.run("double-resume", termination: .exited(1))
    run.events = TestEventLog()
    #expect(Classifier.grade(run, sampleContext()).verdict == .crashed)
  }

  @Test func gradesTheDeadlineIssueAsNeverResumed() throws {
    let grade = Classifier.grade(
      try Fixtures.run("deadline", termination: .exited(1)), sampleContext())
    #expect(grade.verdict == .neverResumed)
    #expect(grade.details[0].hasPrefix("Never resumed: deliveredValue(5) did not finish"))
    #expect(
      grade.details[1]
        == "test returnsTheDeliveredValue() at Tests/01-BasicsTests/03-ForgottenPathTests.swift:8")
    #expect(grade.details[2].hasPrefix("the runtime said: SWIFT TASK CONTINUATION MISUSE"))
  }

  /// The deadline sample with its issue replaced by the pool detector's.
  static func blockedPoolRun(termination: Termination) throws -> SuiteRun {
    let events = try Fixtures.sample("deadline.events.jsonl").replacingOccurrences(
      of: "Never resumed: deliveredValue(5) did not finish within 1.0 seconds.",
      with: "\(Classifier.poolBlockedMarker) deliveredValue(5) held one of Swift's threads.")
    return SuiteRun(
      outcome: ProcessOutcome(termination: termination, stderr: ""),
      events: EventStreamParser.parse(events))
  }

  @Test func aBlockedPoolIsAFailureThatNamesIt() throws {
    let grade = Classifier.grade(
      try Self.blockedPoolRun(termination: .exited(1)), sampleContext())
    #expect(grade.verdict == .failed)
    #expect(grade.details[0].hasPrefix("\(Classifier.poolBlockedMarker) deliveredValue(5)"))
    #expect(grade.details[1].hasPrefix("test returnsTheDeliveredValue() at"))
  }

  @Test func aBlockedPoolHeadlinesOverTheTimeLimitItCaused() throws {
    let grade = Classifier.grade(
      try Self.blockedPoolRun(termination: .timedOut(seconds: 30)), sampleContext())
    #expect(grade.verdict == .failed)
    #expect(grade.details[0].hasPrefix(Classifier.poolBlockedMarker))
    #expect(grade.details.last?.contains("the blocked thread never came back") == true)
  }

  @Test func aBlockedPoolThatHungTheRunIsNamedFromStderr() throws {
    var run = try Fixtures.run("hang", termination: .timedOut(seconds: 30))
    run.outcome.stderr =
      "some output\n\(BlockedAnnouncement.marker) Reads input\t\(Classifier.poolBlockedMarker) "
      + "the clipper blocked its thread instead of suspending.\n"
      + "\(BlockedAnnouncement.marker) Another\t\(Classifier.poolBlockedMarker) later.\n"
    let grade = Classifier.grade(run, sampleContext())
    #expect(grade.verdict == .failed)
    #expect(
      grade.details.prefix(2) == [
        "\(Classifier.poolBlockedMarker) the clipper blocked its thread instead of suspending.",
        "test Reads input",
      ])
    #expect(grade.details.last?.contains("still running after 30 s") == true)
  }

  @Test func aRunStoppedAfterItsAnnouncementIsNamedFromStderr() throws {
    var run = try Fixtures.run("hang", termination: .stoppedAfterBlocking(seconds: 9.5))
    run.outcome.stderr =
      "\(BlockedAnnouncement.marker) Loads\t\(Classifier.mainActorBlockedMarker) load() blocked "
      + "the main actor instead of suspending.\n"
    let grade = Classifier.grade(run, sampleContext())
    #expect(grade.verdict == .failed)
    #expect(
      grade.details.prefix(2) == [
        "\(Classifier.mainActorBlockedMarker) load() blocked the main actor instead of suspending.",
        "test Loads",
      ])
    #expect(grade.details.last?.contains("stopped them after 9.5 s") == true)
  }

  @Test func anAnnouncementDoesNotTurnAFinishedRunIntoABlockedOne() throws {
    // A run that ended by itself has its issues; a blocking seen on the way was recorded
    // there, if it mattered.
    var run = try Fixtures.run("failed", termination: .exited(1))
    run.outcome.stderr = "\(BlockedAnnouncement.marker) t\t\(Classifier.poolBlockedMarker) x\n"
    let grade = Classifier.grade(run, sampleContext())
    #expect(
      grade.details.first == "test doublesFour() at Tests/01-BasicsTests/02-DoublingTests.swift:11")
  }

  @Test func gradesTheDeadlineIssueAsNeverResumedEvenForAnUntouchedStarter() throws {
    let grade = Classifier.grade(
      try Fixtures.run("deadline", termination: .exited(1)), sampleContext(untouched: true))
    #expect(grade.verdict == .neverResumed)
  }

  @Test func gradesATimeoutAsNeverResumed() throws {
    let grade = Classifier.grade(
      try Fixtures.run("hang", termination: .timedOut(seconds: 30)), sampleContext())
    #expect(grade.verdict == .neverResumed)
    #expect(
      grade.details.prefix(2) == [
        "the tests were still running after 30 s, so the runner stopped them",
        "still running: test returnsOnceTheCallbackSignals()",
      ])
  }

  /// A mistake that floods the machine (a poll in a tight loop) fails the test of its own
  /// path, then holds up the others until the time limit: that failure heads the verdict.
  @Test func aFailureBeforeTheTimeLimitHeadsTheTimeout() throws {
    let grade = Classifier.grade(
      try Fixtures.run("failed", termination: .timedOut(seconds: 30)), sampleContext())
    #expect(grade.verdict == .neverResumed)
    #expect(
      grade.details.first == "test doublesFour() at Tests/01-BasicsTests/02-DoublingTests.swift:11")
    #expect(grade.details.contains("double(4) should be 8"))
    #expect(
      grade.details.contains(
        "after that, the tests were still running after 30 s, so the runner stopped them"))
  }

  /// Two tests crashing at once can hang the runtime's crash reporter, so the process runs
  /// into the limit although the crash is what stopped the tests.
  @Test(arguments: [Termination.timedOut(seconds: 30), .stoppedAfterCrash])
  func gradesACrashThatThenHungAsCrashed(termination: Termination) throws {
    var run = try Fixtures.run("double-resume", termination: termination)
    run.events = EventStreamParser.parse(try Fixtures.sample("hang.events.jsonl"))
    let grade = Classifier.grade(run, sampleContext())
    #expect(grade.verdict == .crashed)
    #expect(
      grade.details.first?.contains("tried to resume its continuation more than once") == true)
  }

  @Test func gradesAFailedExpectationWithItsLocation() throws {
    let grade = Classifier.grade(
      try Fixtures.run("failed", termination: .exited(1)), sampleContext())
    #expect(
      grade
        == Grade(
          .failed,
          [
            "test doublesFour() at Tests/01-BasicsTests/02-DoublingTests.swift:11",
            "Expectation failed: (double(4) → 12) == 8",
            "double(4) should be 8",
          ]))
  }

  @Test func gradesAnUntouchedStarterAsNotStarted() throws {
    let grade = Classifier.grade(
      try Fixtures.run("failed", termination: .exited(1)), sampleContext(untouched: true))
    #expect(
      grade == Grade(.notStarted, ["open Chapters/01-Basics/02-Doubling.swift and find the TODO"]))
  }

  @Test func gradesACleanRunAsPassed() throws {
    let grade = Classifier.grade(
      try Fixtures.run("passed", termination: .exited(0)), sampleContext(untouched: true))
    #expect(grade == Grade(.passed))
  }

  @Test func gradesARunWithoutTestsAsAMetadataError() {
    let run = SuiteRun(outcome: ProcessOutcome(termination: .exited(0)), events: TestEventLog())
    let grade = Classifier.grade(run, sampleContext(suite: "TypoTests"))
    #expect(grade.verdict == .failed)
    #expect(grade.details.first == "no tests matched suite TypoTests in BasicsTests")
  }

  @Test func formatsSeconds() {
    #expect(Classifier.formatSeconds(30) == "30 s")
    #expect(Classifier.formatSeconds(2.5) == "2.5 s")
  }
}

@Suite struct ThrownExplanationTests {
  /// A test that expected a value got "Caught error: …"; withDeadline said what it was about.
  func run(stderr: String) -> SuiteRun {
    var events = TestEventLog()
    let id = "BasicsTests.DoublingTests/doubles()/02-DoublingTests.swift:9:4"
    events.tests[id] = TestEventLog.Test(
      id: id, name: "doubles()", displayName: "Doubles the value", kind: "function", line: 9)
    events.started = [id]
    events.ended = [id]
    events.issues = [
      TestEventLog.Issue(
        testID: id, messages: [.init(symbol: "fail", text: "Caught error: tooBig")],
        filePath: "/ROOT/Tests/01-BasicsTests/02-DoublingTests.swift", line: 9, column: 4)
    ]
    events.runEnded = true
    return SuiteRun(
      outcome: ProcessOutcome(termination: .exited(1), stderr: stderr), events: events)
  }

  @Test func addsTheTestsHintToACaughtError() {
    let stderr =
      "workbook-thrown: Another test\tdouble(_:)\tother\tnot this one\n"
      + "workbook-thrown: Doubles the value\tdouble(_:)\ttooBig\tresume with the doubled value\n"
    let grade = Classifier.grade(run(stderr: stderr), sampleContext())
    #expect(grade.verdict == .failed)
    #expect(
      grade.details.last
        == "double(_:) threw tooBig, where this test expected it to finish without an error; "
        + "the test's hint: resume with the doubled value")
  }

  @Test func saysNothingMoreWithoutAnExplanation() {
    let grade = Classifier.grade(run(stderr: "something else\n"), sampleContext())
    #expect(grade.verdict == .failed)
    #expect(grade.details.last == "Caught error: tooBig")
  }
}

@Suite struct ExpectedErrorTests {
  func issue(in source: String, line: Int) throws -> TestEventLog.Issue {
    let file = FileManager.default.temporaryDirectory
      .appendingPathComponent("expected-error-\(UUID().uuidString).swift")
    try source.write(to: file, atomically: true, encoding: .utf8)
    return TestEventLog.Issue(
      testID: nil,
      messages: [
        .init(symbol: "fail", text: "Expectation failed: an error was expected but none was thrown")
      ],
      filePath: file.path, line: line, column: 5)
  }

  @Test(arguments: [
    (
      "    await #expect(throws: CoFutureError.cancelled) {\n      try await f()\n    }",
      "CoFutureError.cancelled"
    ),
    ("    #expect(throws: Boom(), \"why\") { try f() }", "Boom()"),
    ("    await #expect(\n      throws: (any Error).self\n    ) {", "an error of type (any Error)"),
  ])
  func namesTheErrorTheTestExpected(source: String, expected: String) throws {
    #expect(
      Classifier.expectedError(at: try issue(in: "// a test\n" + source, line: 2)) == expected)
  }

  @Test func explainsARecursiveLock() {
    var crash = CrashReport()
    crash.fatalMessage = "Recursive call to lock Mutex"
    let meaning = Classifier.meaning(of: crash) ?? ""
    #expect(meaning.hasPrefix("a lock was taken again by the thread that already held it"))
  }
}
