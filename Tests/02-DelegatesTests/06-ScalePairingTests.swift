import LegacyKit
import Synchronization
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
  + "yet, so the report found nobody; store or subscribe before you start: store the "
  + "continuation first, then set the delegate and start the pairing"
private let cancelHint =
  "pairingSessionDidCancel(_:) is an optional delegate method, so the compiler never asked "
  + "for it: implement it, and resume the stored continuation by throwing PairingCancelled()"
private let failureHint =
  "didFailWithError must resume the stored continuation by throwing the session's error"

/// Records the progress `pairScale` passes on, from any thread.
private final class ProgressLog: Sendable {
  private let values = Mutex<[Double]>([])

  var report: @Sendable (Double) -> Void { { value in self.values.withLock { $0.append(value) } } }
  var reported: [Double] { values.withLock { $0 } }
}

/// Runs `pairScale` within the deadline and returns how it ended.
private func pairing(
  _ session: ScalePairingSession, hint: String, log: ProgressLog = ProgressLog(),
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> Result<PairedScale, any Error> {
  try await withDeadline(.seconds(2), name, hint: hint, sourceLocation: sourceLocation) {
    do {
      return .success(try await pairScale(session, code: code, progress: log.report))
    } catch {
      return .failure(error)
    }
  }
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

@Suite("2.6 Scale pairing (challenge)")
struct ScalePairingTests {
  // First in the file on purpose: when several tests fail, the runner shows the first one,
  // and this one tells "stored too late" apart from "never resumed at all".
  @Test("Stores the continuation before starting: this session reports at once")
  func storesBeforeStarting() async throws {
    let session = ScalePairingSession(outcome: .pairs(scale), script: .synchronously)
    let log = ProgressLog()

    let outcome = try await pairing(session, hint: storeFirstHint, log: log)

    expectPaired(outcome, "the session paired with it")
    #expect(
      log.reported == [0.25, 0.5, 0.75],
      """
      progress received \(log.reported.isEmpty ? "nothing" : "\(log.reported)"), not the \
      values the session reported inside startPairing(code:): pass each didProgress value \
      on to progress, in order, before you return
      """)
  }

  @Test(
    "Pairs, and passes each progress value on in order, wherever the session reports",
    arguments: [CallbackScript.default, .later(.milliseconds(100))])
  func pairsAndReportsProgress(script: CallbackScript) async throws {
    let steps = (1...10).map { Double($0) / 10 }
    let session = ScalePairingSession(outcome: .pairs(scale), progress: steps, script: script)
    let log = ProgressLog()

    let outcome = try await pairing(session, hint: pairHint, log: log)

    expectPaired(outcome, "the session paired with it")
    #expect(
      log.reported == steps,
      """
      progress received \(log.reported.isEmpty ? "nothing" : "\(log.reported)"), not the \
      \(steps.count) values the session reported (\(steps.first!) to \(steps.last!)) in \
      order: pass each didProgress value on to progress before you return
      """)
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
    let log = ProgressLog()

    let pairingTask = Task { try await pairScale(session, code: code, progress: log.report) }
    let started = await eventually(within: .seconds(1)) { session.isPairing }
    #expect(started, "pairScale should start pairing (startPairing(code:)) right away")
    // The scale is switched off: only the app's Cancel button ends this pairing.
    session.cancel()
    let outcome = try await withDeadline(.seconds(2), name, hint: cancelHint) {
      await pairingTask.result
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
    "Answers once when the firmware repeats the outcome, or fails after pairing",
    arguments: [
      ScalePairingSession.Outcome.pairs(scale), .pairsThenFails(scale, .outOfRange),
    ])
  func answersOnce(outcome: ScalePairingSession.Outcome) async throws {
    let session = ScalePairingSession(outcome: outcome, script: .twice)

    let result = try await pairing(session, hint: pairHint)

    expectPaired(result, "the session paired with it first; what it said after that is stale")
  }

  @Test("Keeps its delegate alive while the scale takes its time")
  func keepsTheDelegateAlive() async throws {
    let session = ScalePairingSession(outcome: .pairs(scale), script: .later(.milliseconds(300)))

    let outcome = try await pairing(session, hint: pairHint)

    expectPaired(outcome, "the session paired with it")
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
  }

  @Test("Suspends while it waits, so a session reporting on its thread can answer")
  func suspendsWhileWaiting() async throws {
    let executor = OneThreadExecutor()
    let session = ScalePairingSession(outcome: .pairs(scale), script: .onThreadOf(executor))
    let log = ProgressLog()

    let paired = try await withDeadline(.seconds(2), name, hint: pairHint, on: executor) {
      try await pairScale(session, code: code, progress: log.report)
    }

    #expect(paired == scale, "pairScale must return the scale the session paired with")
  }
}

extension Result {
  /// The error, for a failure.
  fileprivate var failureValue: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
