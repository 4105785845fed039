import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import Delegates

private let scale = PairedScale(name: "Kitchen scale", serialNumber: "KS-4711")
private let code = "4711"
private let name = "pairScale(_:code:progress:)"

private let pairHint =
  "didPair must resume the stored continuation; is your delegate still alive? The session "
  + "holds it weakly, so a delegate nothing else holds is gone before the scale answers"
private let storeFirstHint =
  "this session reports inside startPairing(code:), and your continuation was not stored "
  + "yet, or your delegate not set yet, so the report found nobody; store or subscribe "
  + "before you start: store the continuation and set the delegate, then start the pairing"
private let cancelHint =
  "pairingSessionDidCancel(_:) is an optional delegate method, so the compiler never asked "
  + "for it: implement it, and resume the stored continuation by throwing PairingCancelled()"
private let failureHint =
  "didFailWithError must resume the stored continuation by throwing the session's error"

/// Runs `pairScale` within the deadline and returns how it ended. The progress it passes on
/// goes to `log`, which is closed the moment `pairScale` returns (in the same job, before
/// anything else can run), so a value passed on after that counts as late.
private func pairing(
  _ session: ScalePairingSession, hint: String, log: EventLog<Double> = EventLog(),
  limit: Duration = .seconds(2), sourceLocation: SourceLocation = #_sourceLocation
) async throws -> Result<PairedScale, any Error> {
  try await withDeadline(limit, name, hint: hint, sourceLocation: sourceLocation) {
    let outcome: Result<PairedScale, any Error>
    do {
      outcome = .success(try await pairScale(session, code: code, progress: log.recorder))
    } catch {
      outcome = .failure(error)
    }
    log.close()
    return outcome
  }
}

/// What is wrong with the progress `log` received, compared with the `steps` the session
/// reported; `nil` when every value arrived, once, in order, before `pairScale` returned.
private func progressProblem(_ log: EventLog<Double>, steps: [Double]) -> Comment? {
  guard let fault = log.fault(expected: steps) else { return nil }
  let received = log.received
  switch fault {
  case .missing(let count, _, _) where count == steps.count:
    return """
      progress received nothing, not the \(steps.count) values the session reported \
      (\(steps.first!) to \(steps.last!)): pass each didProgress value on to progress, in \
      order, before you return
      """
  case .late:
    return Comment(
      rawValue: """
        pairScale returned before passing on every progress value: \(fault). The session \
        reports all its progress before the outcome, so a caller that has its answer must \
        have had every value; one passed on later moves a progress bar after the pairing has \
        ended (or during the next one)
        """)
  default:
    return Comment(
      rawValue: """
        progress received \(received.count) values, not the \(steps.count) the session \
        reported, once each and in order: \(fault). Pass each didProgress value on as the \
        session reports it, in the order it reports them
        """)
  }
}

/// What went wrong when the two reports a session made at once (the scale pairing as the
/// app cancels) held each other up; `nil` when they did not.
private func stalledReports(_ session: ScalePairingSession) -> Comment? {
  // Once could be a thread the machine did not run for half a second; in two pairings, it
  // is the two reports waiting for each other.
  guard session.stalledReportWaits >= 2 else { return nil }
  return """
    the scale paired as the app cancelled, two reports at once on two threads, and one of \
    them waited in the session (its delegate property) for the other, which never got \
    there: the other report was waiting for a lock your delegate held while it called the \
    session or resumed the caller. The session has a lock of its own that its reports \
    hold, so holding yours across a call into the session (session.delegate) makes the two \
    wait for each other; take what you need under your lock, and call the session, and \
    resume, after letting go
    """
}

/// Checks that `outcome` is the paired scale.
private func expectPaired(
  _ outcome: Result<PairedScale, any Error>, _ why: String,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  switch outcome {
  case .success(let paired):
    #expect(
      paired == scale, "pairScale returned \(paired), not the scale the session paired with",
      sourceLocation: sourceLocation)
  case .failure(let error):
    Issue.record(
      Comment(rawValue: "pairScale threw \(error) although \(why)"),
      sourceLocation: sourceLocation)
  }
}

/// The contract of `pairScale(_:code:progress:)`: each path, what the caller sees, and the
/// test that checks it (— where a column does not apply, and why). Every pairing but the
/// app-cancelled one goes through `pairing(_:hint:log:)`, which closes the progress log the
/// moment `pairScale` returns: progress is checked at return. Tests whose name is in the
/// contract file are in `06-ScalePairingContractTests.swift`.
///
/// | path | result, error | delegate, session | progress (count, order) | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | pairs, reported inside `startPairing` | the scale: `storesBeforeStarting` | stored before starting: `storesBeforeStarting` | all, in order, before return: `storesBeforeStarting` | — |
/// | pairs, later or on another thread | the scale: `pairsAndReportsProgress` | one start: `pairsAndReportsProgress` | 300 values, once each, in order, none after return: `pairsAndReportsProgress`; a repeated value and one going back too: `progressAsReported` | any thread: `pairsAndReportsProgress` |
/// | fails | the session's error, unchanged: `throwsTheSessionsError` | — | — | — |
/// | cancelled on the scale | `PairingCancelled`: `cancelledOnTheScale` | — | — | — |
/// | cancelled by the app (`session.cancel()`) | `PairingCancelled`: `cancelledByTheApp` | started at once: `cancelledByTheApp` | — | — |
/// | cancelled by the app from the progress handler, the session reporting at once | `PairingCancelled`: `progressHandlerCancels` | — | — | the cancel's report comes inside the progress call, on its thread: `progressHandlerCancels` |
/// | each outcome repeated; pairs then fails | the first outcome, once: `answersOnce` | — | — | — |
/// | pairs as the app cancels, on two threads at once | the scale or `PairingCancelled`, once: `pairsAsTheAppCancels`, round after round: `pairsAsTheAppCancelsAgainAndAgain` | — | — | the two reports overlap, held in the delegate accessors: `pairsAsTheAppCancels`; released together with random offsets: `pairsAsTheAppCancelsAgainAndAgain`; neither holds the other up (no lock of the delegate's held across the session's accessors or the resume), pairing after pairing: `pairsAsTheAppCancelsAgainAndAgain` |
/// | slow scale | the scale, after 4 s too (no time limit of its own): `keepsTheDelegateAlive`, `slowScale` | the delegate outlives the wait (held weakly by the session): `keepsTheDelegateAlive` | — | suspends on the reporting thread: `suspendsWhileWaiting`; 4 s blocks no thread: `slowScale` |
/// | pairs: the caller answered | the scale: `letsGoOfTheSessionBeforeTheCallerGoesOn` | no delegate of the pairing left on the session when the caller is resumed: `letsGoOfTheSessionBeforeTheCallerGoesOn` | — | — |
/// | paired again on the same session | each pairing its own outcome, also after a success: `pairsAgain` | one start per call: `pairsAgain`, the same code 20 times: `everyCallPairsWithItsOwnProgress` | each call's values to that call's handler: `everyCallPairsWithItsOwnProgress` | — |
/// | a progress report on its way when the app cancels | `PairingCancelled`: `progressUnderWayWhenTheAppCancels` | — | not passed on once the caller has its answer: `progressUnderWayWhenTheAppCancels` | the report held between the session picking the delegate and telling it: `progressUnderWayWhenTheAppCancels` |
/// | any ending (pairs, fails, cancelled on the scale or by the app), the caller answered | — | the delegate, the session and the progress handler let go: `letsGoOfTheHandlerHoweverItEnds` | — | — |
/// | two pairings at once on one session | — the session pairs one at a time, by its contract | | | |
/// | a progress report held while the app cancels, let go once the same session pairs again | — not caught: `progressUnderWayWhenTheAppCancels` lets the held report go before the next pairing starts; a delegate that asks `session.isPairing` instead of its own stored pairing would hand it to the old caller's handler | | | |
/// | an early outcome buffered, then looked for and waited on in two separate locked steps | — not caught: the outcome must land between the answer's own two lock steps, which call nothing a test can pause | | | |
/// | the calling task cancelled | — the doc comment promises nothing for it: the session's own `cancel()` is how a pairing is stopped | | | |
@Suite("2.6 Scale pairing (challenge)")
struct ScalePairingTests {
  // First in the file on purpose: when several tests fail, the runner shows the first one,
  // and this one tells "stored too late" apart from "never resumed at all".
  @Test("Stores the continuation before starting: this session reports at once")
  func storesBeforeStarting() async throws {
    let session = ScalePairingSession(outcome: .pairs(scale), script: .synchronously)
    let log = EventLog<Double>()

    let outcome = try await pairing(session, hint: storeFirstHint, log: log)

    expectPaired(outcome, "the session paired with it")
    let problem = progressProblem(log, steps: [0.25, 0.5, 0.75])
    #expect(problem == nil, problem ?? "")
  }

  @Test(
    "Pairs, and passes each of 300 progress values on in order before it returns, wherever the session reports",
    arguments: [CallbackScript.synchronously, .default, .later(.milliseconds(100))])
  func pairsAndReportsProgress(script: CallbackScript) async throws {
    let steps = (1...300).map { Double($0) / 300 }
    let session = ScalePairingSession(outcome: .pairs(scale), progress: steps, script: script)
    let log = EventLog<Double>()

    let outcome = try await pairing(session, hint: pairHint, log: log)

    expectPaired(outcome, "the session paired with it")
    let problem = progressProblem(log, steps: steps)
    #expect(problem == nil, problem ?? "")
    #expect(session.startCount == 1, "one call should start one pairing")
  }

  @Test(
    "Throws the session's error when the pairing fails",
    arguments: [CallbackScript.synchronously, .default])
  func throwsTheSessionsError(script: CallbackScript) async throws {
    let session = ScalePairingSession(outcome: .fails(.wrongCode), script: script)

    let outcome = try await pairing(session, hint: failureHint)

    switch outcome {
    case .success(let paired):
      Issue.record("pairScale returned \(paired) although the pairing failed: throw its error")
    case .failure(let error):
      #expect(
        error as? ScalePairingError == .wrongCode,
        "pairScale threw \(error); it must throw the session's own error, wrongCode, unchanged")
    }
  }

  @Test(
    "Throws PairingCancelled when someone cancels on the scale",
    arguments: [CallbackScript.synchronously, .default])
  func cancelledOnTheScale(script: CallbackScript) async throws {
    let session = ScalePairingSession(outcome: .cancelledOnTheScale, script: script)

    let outcome = try await pairing(session, hint: cancelHint)

    Self.expectCancelled(outcome)
  }

  @Test("Throws PairingCancelled when the app cancels a pairing the scale never answers")
  func cancelledByTheApp() async throws {
    let session = ScalePairingSession(outcome: .noAnswer)
    let log = EventLog<Double>()

    let pairingTask = Task { try await pairScale(session, code: code, progress: log.recorder) }
    let started = await eventually(within: .seconds(1)) { session.isPairing }
    #expect(started, "pairScale should start pairing (startPairing(code:)) right away")
    // The scale is switched off: only the app's Cancel button ends this pairing.
    session.cancel()
    let outcome = try await withDeadline(.seconds(2), name, hint: cancelHint) {
      await pairingTask.result
    }

    Self.expectCancelled(outcome)
  }

  @Test(
    "A progress handler that cancels the pairing gets PairingCancelled, even from a session that reports at once"
  )
  func progressHandlerCancels() async throws {
    // The app's Cancel button, pressed from the progress UI: the session tells the delegate
    // about the cancel at once, on the thread that cancels, inside the progress report.
    let session = ScalePairingSession(outcome: .noAnswer, script: .synchronously)
    let progressed = Locked(false)
    let pairing = Task {
      try await pairScale(
        session, code: code,
        progress: { _ in
          progressed.withLock { $0 = true }
          session.cancel()
        })
    }
    guard await eventually({ progressed.value }) else {
      // Ended by the test, so that a handler never called leaves nothing waiting.
      session.cancel()
      _ = try await withDeadline(.seconds(2), name, hint: cancelHint) { await pairing.result }
      Issue.record(
        "the session reported progress, and the progress handler was never called: pass each didProgress value on to progress"
      )
      return
    }
    let outcome = try await withDeadline(.seconds(2), name, hint: cancelHint) {
      await pairing.result
    }

    Self.expectCancelled(outcome)
  }

  static func expectCancelled(
    _ outcome: Result<PairedScale, any Error>, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    switch outcome {
    case .success(let paired):
      Issue.record(
        "pairScale returned \(paired) although the pairing was cancelled: throw PairingCancelled()",
        sourceLocation: sourceLocation)
    case .failure(let error):
      #expect(
        error is PairingCancelled,
        "pairScale threw \(error) for a cancelled pairing; it must throw PairingCancelled()",
        sourceLocation: sourceLocation)
    }
  }

  @Test(
    "Answers once when the firmware repeats any outcome, or fails after pairing",
    arguments: [
      ScalePairingSession.Outcome.pairs(scale), .pairsThenFails(scale, .outOfRange),
      .fails(.wrongCode), .cancelledOnTheScale,
    ])
  func answersOnce(outcome: ScalePairingSession.Outcome) async throws {
    // Each report comes twice, the second right after the first, on the same thread: a
    // path that resumes without taking the continuation out resumes it twice, and the
    // runtime stops the tests.
    let session = ScalePairingSession(outcome: outcome, script: .twice)

    let result = try await pairing(session, hint: "\(pairHint); \(failureHint); \(cancelHint)")

    switch outcome {
    case .fails:
      #expect(
        (result.failureValue as? ScalePairingError) == .wrongCode,
        "the pairing failed with wrongCode (twice), and pairScale must throw it once; got \(result)"
      )
    case .cancelledOnTheScale:
      Self.expectCancelled(result)
    default:
      expectPaired(result, "the session paired with it first; what it said after that is stale")
    }
  }

  @Test("The scale pairing as the app cancels, both reported at once on two threads: one answer")
  func pairsAsTheAppCancels() async throws {
    // The two reports overlap for real: the session holds each reporting thread in its
    // delegate accessors until the other report has got there too. An answer decided by
    // looking at something both reports can see before either changes it (the session's
    // delegate, a flag read before it is set) is given twice, and the runtime stops the tests.
    let session = ScalePairingSession(outcome: .pairsAsTheAppCancels(scale))

    let result = try await pairing(session, hint: "\(pairHint); \(cancelHint)")

    switch result {
    case .success(let paired):
      #expect(
        paired == scale, "pairScale returned \(paired), not the scale the session paired with")
    case .failure(let error):
      #expect(
        error is PairingCancelled,
        """
        pairScale threw \(error); the scale paired as the app cancelled, so it must return the \
        scale or throw PairingCancelled(), whichever report it took first
        """)
    }
  }

  @Test(
    "Round after round, the scale pairing as the app cancels on two threads at once: one answer each time"
  )
  func pairsAsTheAppCancelsAgainAndAgain() async throws {
    // The two reports are released together, each after a random few hundred nanoseconds,
    // so that every interleaving of the two comes up, down to a gap of a few nanoseconds
    // between taking the waiting caller and marking it answered: the rounds go on for a
    // while (seconds in the long form), 100 pairings to a deadline.
    let budget = stressAmount(grading: Duration.milliseconds(300), verify: .seconds(3))
    let session = ScalePairingSession(
      outcome: .pairsAsTheAppCancels(scale), script: .synchronously)
    let clock = ContinuousClock()
    let start = clock.now

    while clock.now - start < budget {
      let outcomes = try await withDeadline(
        .seconds(5), "pairScale(_:code:progress:), 100 pairings as the app cancels",
        hint: "\(pairHint); \(cancelHint)"
      ) {
        var outcomes: [Result<PairedScale, any Error>] = []
        for _ in 0..<100 {
          outcomes.append(await Result { try await pairScale(session, code: code) { _ in } })
          // Each stalled pairing holds its thread for half a second: two are enough to tell.
          if stalledReports(session) != nil { break }
          // A pairing reported inside the call may never suspend: let the pool's watchdog
          // see that its thread is free between two of them.
          await Task.yield()
        }
        return outcomes
      }
      if let stall = stalledReports(session) {
        Issue.record(stall)
        return
      }
      let wrong = outcomes.first { outcome in
        switch outcome {
        case .success(let paired): paired != scale
        case .failure(let error): !(error is PairingCancelled)
        }
      }
      guard let wrong else { continue }
      Issue.record(
        """
        pairScale ended with \(wrong); the scale paired as the app cancelled, so it must \
        return the scale or throw PairingCancelled(), whichever report it took first
        """)
      return
    }
  }

  @Test("Keeps its delegate alive while the scale takes its time")
  func keepsTheDelegateAlive() async throws {
    let session = ScalePairingSession(outcome: .pairs(scale), script: .later(.milliseconds(300)))

    let outcome = try await pairing(session, hint: pairHint)

    expectPaired(outcome, "the session paired with it")
  }

  @Test("A scale that takes 4 seconds holds no thread while pairScale waits, and still pairs")
  func slowScale() async throws {
    // Longer than the watchdog's patience (1.5 s): a wait that blocks a thread (a semaphore,
    // a dispatch group, a sleep loop), in this task or one it starts, is seen and named. And
    // longer than a time limit an answer might set itself: only the session ends a pairing.
    let session = ScalePairingSession(
      outcome: .pairs(scale), script: .later(.milliseconds(4000)))

    let outcome = try await pairing(session, hint: pairHint, limit: .seconds(8))

    expectPaired(
      outcome,
      "the session paired with it, 4 seconds after it started, and nobody cancelled the "
        + "pairing: a pairing takes as long as the scale takes (a user typing its code, say), "
        + "and only the session's own report, or the app's session.cancel(), ends it")
  }

  @Test("The same session pairs again after a pairing has ended")
  func pairsAgain() async throws {
    let session = ScalePairingSession(outcome: .cancelledOnTheScale)

    Self.expectCancelled(try await pairing(session, hint: cancelHint))
    session.outcome = .fails(.outOfRange)
    let second = try await pairing(session, hint: failureHint)
    #expect(
      (try? second.get()) == nil && (second.failureValue as? ScalePairingError) == .outOfRange,
      "the second pairing failed with outOfRange, and pairScale must throw that error")
    session.outcome = .pairs(scale)
    expectPaired(
      try await pairing(session, hint: pairHint), "the third pairing on the session succeeded")
    #expect(session.startCount == 3, "three calls should start three pairings")

    // After a success too: each call pairs anew, and says what the session says now.
    session.outcome = .fails(.wrongCode)
    let fourth = try await pairing(session, hint: failureHint)
    #expect(
      (fourth.failureValue as? ScalePairingError) == .wrongCode && session.startCount == 4,
      Comment(
        rawValue: "after a pairing that succeeded, the next one on the session failed with "
          + "wrongCode, and pairScale gave \(fourth) with \(session.startCount) pairings "
          + "started: each call starts a pairing of its own; a scale kept from an earlier "
          + "pairing hides what the session says now"))
  }

  @Test("Suspends while it waits, so a session reporting on its thread can answer")
  func suspendsWhileWaiting() async throws {
    let executor = OneThreadExecutor()
    let session = ScalePairingSession(outcome: .pairs(scale), script: .onThreadOf(executor))
    let log = EventLog<Double>()

    let paired = try await withDeadline(.seconds(2), name, hint: pairHint, on: executor) {
      try await pairScale(session, code: code, progress: log.recorder)
    }

    #expect(paired == scale, "pairScale must return the scale the session paired with")
  }

  @Test("Passes on every progress value as reported: a repeated one, and one that goes back")
  func progressAsReported() async throws {
    // A scale that resends a value, and one that starts a step over, report it so.
    let steps = [0.2, 0.2, 0.5, 0.4, 0.8, 1.0]
    let session = ScalePairingSession(outcome: .pairs(scale), progress: steps, script: .default)
    let log = EventLog<Double>()

    let outcome = try await pairing(session, hint: pairHint, log: log)

    expectPaired(outcome, "the session paired with it")
    #expect(
      log.received == steps,
      """
      the session reported \(steps), and progress received \(log.received): pass each value \
      on as the session reports it, a repeated one and one that goes back included; what to \
      draw is the caller's choice
      """)
  }

  @Test(
    "A progress report still on its way when the app cancels is not passed on after pairScale returns"
  )
  func progressUnderWayWhenTheAppCancels() async throws {
    // Each report on a thread of its own, so that the cancel's report is not queued behind
    // the progress report held below; `delivered` counts the reports that are over.
    let delivered = Locked(0)
    let threads = CallbackScript(
      timing: .scheduled(
        CallbackScheduler(name: "a thread for each report") { work in
          Thread {
            work()
            delivered.withLock { $0 += 1 }
          }.start()
        }))
    let session = ScalePairingSession(outcome: .noAnswer, script: threads)
    let log = EventLog<Double>()
    let returned = Locked(false)
    // The session has picked its delegate to tell about 0.5 and not told it yet when the
    // app cancels; that report goes on once the caller has its answer (2 s at most).
    session.onProgressReport = { [weak session] fraction in
      guard fraction == 0.5, let session else { return }
      session.cancel()
      _ = waitOnThisThread(upTo: .seconds(2)) { returned.value }
    }
    defer { session.onProgressReport = nil }

    let pairingTask = Task { () -> Result<PairedScale, any Error> in
      let outcome = await Result {
        try await pairScale(session, code: code, progress: log.recorder)
      }
      log.close()
      returned.withLock { $0 = true }
      return outcome
    }
    let outcome = try await withDeadline(.seconds(3), name, hint: cancelHint) {
      await pairingTask.value
    }
    // The progress report and the cancel's report, both over.
    #expect(await eventually { delivered.value == 2 }, "the session's reports did not finish")

    Self.expectCancelled(outcome)
    #expect(
      log.late.isEmpty,
      Comment(
        rawValue: "the session began reporting \(log.late) before the app cancelled, and "
          + "pairScale passed it to progress after it had returned (with PairingCancelled): "
          + "a value passed on after the answer moves a progress bar once the pairing has "
          + "ended, or during the next one. A report can be on its way when the outcome "
          + "comes, on another thread; once the caller has been answered, what is still on "
          + "its way is not passed on"))
  }

  @Test(
    "Every call pairs anew and passes its progress to its own handler, the same code again and again"
  )
  func everyCallPairsWithItsOwnProgress() async throws {
    // Reported inside the call, so that nothing else runs between one call and the next.
    let session = ScalePairingSession(outcome: .pairs(scale), script: .synchronously)
    let steps = [0.25, 0.5, 0.75]
    let logs = (0..<20).map { _ in EventLog<Double>() }

    let outcomes = try await withDeadline(
      .seconds(5), "\(name), 20 pairings one after another on one session", hint: pairHint
    ) {
      var outcomes: [Result<PairedScale, any Error>] = []
      for log in logs {
        do {
          outcomes.append(
            .success(try await pairScale(session, code: code, progress: log.recorder)))
        } catch {
          outcomes.append(.failure(error))
        }
        log.close()
      }
      return outcomes
    }

    for outcome in outcomes {
      expectPaired(outcome, "the session paired with it, every time")
    }
    guard session.startCount == logs.count else {
      Issue.record(
        Comment(
          rawValue: "\(logs.count) calls with the same code on one session started "
            + "\(session.startCount) pairings: each call starts a pairing of its own. A scale "
            + "kept from an earlier call comes with no progress, and hides what the session "
            + "says now (a scale gone out of range, a code changed since)"))
      return
    }
    for (index, log) in logs.enumerated() {
      guard let fault = log.fault(expected: steps) else { continue }
      Issue.record(
        Comment(
          rawValue: "call \(index + 1) of \(logs.count) on one session: its progress handler "
            + "received \(log.received) (\(fault)), not the \(steps) its pairing reported. "
            + "Each call's progress goes to the handler that call was given; a delegate kept "
            + "from an earlier call passes a new pairing's progress on to the old call's "
            + "handler"))
      return
    }
  }

  /// How a pairing ends, for `letsGoOfTheHandlerHoweverItEnds`.
  enum Ending: String, CaseIterable, CustomTestStringConvertible {
    case pairs, fails
    case cancelledOnTheScale = "cancelled on the scale"
    case cancelledByTheApp = "cancelled by the app"

    var testDescription: String { rawValue }
  }

  @Test(
    "Lets go of the pairing's delegate and progress handler once it has answered, however it ended",
    arguments: Ending.allCases)
  func letsGoOfTheHandlerHoweverItEnds(ending: Ending) async throws {
    final class Handler: Sendable {}
    weak var weakHandler: Handler?
    weak var weakSession: ScalePairingSession?
    do {
      let outcome: ScalePairingSession.Outcome =
        switch ending {
        case .pairs: .pairs(scale)
        case .fails: .fails(.wrongCode)
        case .cancelledOnTheScale: .cancelledOnTheScale
        case .cancelledByTheApp: .noAnswer
        }
      let session = ScalePairingSession(outcome: outcome)
      let handler = Handler()
      (weakHandler, weakSession) = (handler, session)
      let progress: @Sendable (Double) -> Void = { _ in _ = handler }
      let pairingTask = Task { try await pairScale(session, code: code, progress: progress) }
      if ending == .cancelledByTheApp {
        #expect(
          await eventually { session.isPairing },
          "pairScale should start pairing (startPairing(code:)) right away")
        session.cancel()
      }
      _ = try await withDeadline(.seconds(2), name, hint: "\(pairHint); \(cancelHint)") {
        await pairingTask.result
      }
    }

    // The session's reporting threads may hold the delegate for a moment after the answer.
    let released = await eventually { weakHandler == nil && weakSession == nil }
    let held = [
      (weakHandler, "its progress handler") as (AnyObject?, String), (weakSession, "the session"),
    ]
    .compactMap { $0.0 == nil ? nil : $0.1 }.joined(separator: " and ")
    #expect(
      released,
      Comment(
        rawValue: "a pairing (\(ending.rawValue)) had answered its caller, and 2 s later "
          + "\(held) still lived, held by nothing of the caller's: the pairing's delegate "
          + "outlived its pairing. "
          + "Whatever keeps the delegate alive while the scale works must let go on every way "
          + "a pairing ends, not only some of them; otherwise each such pairing leaks the "
          + "delegate, the session and what the handler holds (a whole screen)"))
  }
}

extension Result {
  /// The error, for a failure.
  fileprivate var failureValue: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
