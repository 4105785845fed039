import LegacyKit
import Testing
import WorkbookTesting

@testable import Delegates

private let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(200))]
/// Cameras that tell their delegate about the same capture twice.
private let twiceScripts: [CallbackScript] = [
  CallbackScript(timing: .synchronously, times: 2),
  .twice,
  CallbackScript(timing: .after(.milliseconds(100)), times: 2),
]

private let sunset = Image(name: "sunset", width: 4032, height: 3024)
private let harbour = Image(name: "harbour", width: 3024, height: 4032)
/// Captures that end with a file and the camera's error together.
private let filesWithAnError: [PhotoOutput.Outcome] = [
  .photoAndError(sunset, .sensorFault), .corruptDataAndError(.sensorFault),
]
/// One capture's outcome of each kind, for a camera that reports the same again.
private let everyKindOfOutcome: [PhotoOutput.Outcome] = [
  .photo(sunset), .noData, .corruptData, .failure(.deviceBusy),
]

private let photoHint =
  "photoOutput(_:didFinishProcessingPhoto:error:) must resume the stored continuation with "
  + "the decoded image"

/// The likely cause when a capture from `output` was never answered: a delegate freed before
/// the camera reported, when the camera saw that, or else the usual one.
private func photoCause(_ output: PhotoOutput) -> @Sendable () -> String {
  {
    guard output.reportsWithNoDelegate > 0 else { return photoHint }
    return "the camera reported, but the delegate it was given had been freed by then, so "
      + "nobody heard the report: the camera holds its delegate weakly, and nothing else "
      + "kept this one alive while the capture waited"
  }
}
private let errorHint =
  "when the camera reports an error, the stored continuation must be resumed by throwing it"
private let noDataHint =
  "when the photo has no file data (fileDataRepresentation() is nil) and there is no error, "
  + "the stored continuation must throw PhotoCaptureError.noData"
private let undecodableHint =
  "when Image(fileData:) cannot read the file, the stored continuation must throw "
  + "PhotoCaptureError.undecodableData"
private let storeFirstHint =
  "this camera reported inside capturePhoto(delegate:), before it returned, and your "
  + "continuation was not stored yet, so the report found nobody; store or subscribe before "
  + "you start: store the continuation first, then start the capture"
private let overlapHint =
  "a second capture began while the first was still waiting, and its continuation took the "
  + "place of the first one, which nothing resumes any more; keep every waiting caller (a "
  + "list, answered in order), or give each capture its own delegate object"
private let againHint =
  "a capture after the first never returns: store a new continuation for each capture, and "
  + "take the stored one out (leaving nil) when you resume it"

/// Starts two captures one after the other, each once the camera holds the one before:
/// both wait, in that order, until the test opens `gate`.
private func twoHeldCaptures(
  _ processor: PhotoCaptureProcessor, _ output: PhotoOutput, _ gate: CallbackGate,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> (earlier: Task<Image, any Error>, later: Task<Image, any Error>) {
  let earlier = Task { try await processor.capturePhoto(with: output) }
  try #require(
    await eventually { gate.heldCount == 1 }, "capturePhoto(with:) did not start the capture",
    sourceLocation: sourceLocation)
  let later = Task { try await processor.capturePhoto(with: output) }
  try #require(
    await eventually { gate.heldCount == 2 },
    "a second capturePhoto(with:) did not start its capture", sourceLocation: sourceLocation)
  return (earlier, later)
}

/// The contract of `PhotoCaptureProcessor.capturePhoto(with:)`: each path, what the caller
/// sees, and the test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | stored continuations, captures | thread, timing |
/// | --- | --- | --- | --- |
/// | a photo (inside the call, soon, later) | the image: `returnsThePhoto`, `storesBeforeCapturing` | stored before capturing: `storesBeforeCapturing` | answered while the camera reports: `answeredDuringTheReport` |
/// | the camera holds the delegate weakly (a photo soon, or later) | the image: `returnsThePhoto`, `storesBeforeCapturing`; a delegate freed before the report is named as the cause (`PhotoOutput.reportsWithNoDelegate`) | the delegate alive until the camera reports: same tests | — |
/// | the camera's error | that error: `throwsTheCameraError`; even with a file, an image or not: `errorWinsOverAFile` | — | — |
/// | no file, no error | `noData`: `throwsNoData` | — | — |
/// | a file that is not an image | `undecodableData`: `throwsUndecodableData` | — | — |
/// | every outcome, one capture after another | each its own: `capturesAgain`; the same outcome again, answered again: `sameOutcomeAgain` | one capture per call: `capturesAgain`, `sameOutcomeAgain` | — |
/// | two captures overlap | each its photo, in order: `overlappingCapturesBothReturn`; a failed first capture fails only the first caller: `failureAnswersOneCaller` | both kept: `overlappingCapturesBothReturn` | — |
/// | the second report while the first resumes its caller | the two callers answered once each: `twoReportsAtOnce` | the caller taken out before it is resumed: `twoReportsAtOnce` | — |
/// | the same capture reported twice | one resume: `answersOnceWhenReportedTwice`; the repeat kept for no later caller: `repeatedReportIsNotKept` | the next call captures again: `repeatedReportIsNotKept` | — |
/// | two reports for the last caller at the same instant | — | — a look at the list and a removal in two locked steps lets both through, and the second removal traps on an empty list; the gap lies between two lock steps of the answer's own, which call nothing the test can pause (not caught) | — |
/// | cancelled task (before, during, after) | — capturePhoto(with:) promises nothing for a cancelled task: the camera always reports | | |
/// | one of two waiting callers cancelled | the other one still gets a photo: `cancelLeavesTheOthers` | — | — |
@Suite("2.3 Photo capture")
struct PhotoCaptureTests {
  // First in the file on purpose: when several tests fail, the runner shows the first one,
  // and this one tells "stored too late" apart from "never resumed at all".
  @Test("Stores the continuation before capturing: a camera may report inside the call")
  func storesBeforeCapturing() async throws {
    // A camera that reports later works even if the continuation is stored after the call...
    let later = PhotoOutput(outcomes: [.photo(sunset)], script: .later(.milliseconds(300)))
    let laterProcessor = PhotoCaptureProcessor()
    let first = try await withDeadline(
      .seconds(2), "capturePhoto(with:)", likelyCause: photoCause(later)
    ) {
      try await laterProcessor.capturePhoto(with: later)
    }
    #expect(first == sunset, "the camera took \(sunset)")

    // ...but one that reports before capturePhoto(delegate:) returns finds nobody to resume.
    let atOnce = PhotoOutput(outcomes: [.photo(harbour)], script: .synchronously)
    let atOnceProcessor = PhotoCaptureProcessor()
    let second = try await withDeadline(
      .seconds(2), "capturePhoto(with:) with a camera that reports inside the call",
      hint: storeFirstHint
    ) {
      try await atOnceProcessor.capturePhoto(with: atOnce)
    }
    #expect(second == harbour, "the camera took \(harbour)")
  }

  @Test("The capture is answered while the camera reports it, not by work left for later")
  func answeredDuringTheReport() async throws {
    let watch = ResumeWatch()
    let output = PhotoOutput(outcomes: [.photo(sunset)], script: watch.reportScript)
    let processor = PhotoCaptureProcessor()

    let (results, _, outside) = try await resumedInsideTheReport(
      "capturePhoto(with:)", hint: photoHint, watch: watch
    ) {
      try await processor.capturePhoto(with: output)
    }

    #expect(
      try results.first?.get() == sunset,
      "capturePhoto(with:) must return the photo the camera took")
    #expect(outside == 0, resumedAfterTheReport("capturePhoto(with:)", outside: outside))
    withExtendedLifetime(processor) {}
  }

  @Test("Two reports at the same moment answer the two waiting callers, once each")
  func twoReportsAtOnce() async throws {
    let watch = ResumeWatch()
    let output = PhotoOutput(
      outcomes: [.photo(sunset), .photo(harbour)], script: watch.reportScript)
    let processor = PhotoCaptureProcessor()
    let probe = ResumeProbeExecutor()

    // Two captures wait; the camera holds both reports.
    let earlier = Task(executorPreference: probe) { try await processor.capturePhoto(with: output) }
    try #require(
      await eventually { watch.heldCount == 1 }, "capturePhoto(with:) did not start the capture")
    let later = Task(executorPreference: probe) { try await processor.capturePhoto(with: output) }
    try #require(
      await eventually { watch.heldCount == 2 },
      "a second capturePhoto(with:) did not start its capture")
    for _ in 0..<20 { await Task.yield() }
    // The second report comes while the first one is resuming its caller: it must find that
    // caller already answered, and answer the other one.
    probe.onNextResume {
      watch.releaseOne()
      _ = waitOnThisThread(upTo: .seconds(1)) { output.reportCount == 2 }
    }
    watch.releaseOne()
    let first = try await withDeadline(
      .seconds(2), "the first capturePhoto(with:)", hint: overlapHint
    ) {
      try await earlier.value
    }
    let second = try await withDeadline(
      .seconds(2), "the second capturePhoto(with:), reported while the first was resumed,",
      hint: """
        the second report came while the first caller was being resumed, and found no \
        caller to answer: each report must take its caller out in the same step as it finds \
        it, before resuming
        """
    ) {
      try await later.value
    }

    #expect(first == sunset, "the first capture's photo goes to the first caller")
    #expect(second == harbour, "the second capture's photo goes to the second caller")
    #expect(probe.probesFired == 1, "the first caller was never resumed")
  }

  @Test("Returns the captured photo", arguments: scripts)
  func returnsThePhoto(script: CallbackScript) async throws {
    let output = PhotoOutput(outcomes: [.photo(sunset)], script: script)
    let processor = PhotoCaptureProcessor()

    let image = try await withDeadline(
      .seconds(2), "capturePhoto(with:)", likelyCause: photoCause(output)
    ) {
      try await processor.capturePhoto(with: output)
    }

    #expect(image == sunset, "capturePhoto(with:) must return the photo the camera took")
    #expect(output.captureCount == 1, "capturePhoto(with:) must capture exactly once")
  }

  @Test("Throws the camera's error when the capture fails", arguments: scripts)
  func throwsTheCameraError(script: CallbackScript) async throws {
    let output = PhotoOutput(outcomes: [.failure(.deviceBusy)], script: script)
    let processor = PhotoCaptureProcessor()

    await #expect(
      throws: CameraError.deviceBusy,
      "when the camera reports an error, throw that error itself, not a PhotoCaptureError"
    ) {
      try await withDeadline(.seconds(2), "capturePhoto(with:)", hint: errorHint) {
        try await processor.capturePhoto(with: output)
      }
    }
  }

  @Test("Throws noData when the capture ends with neither a file nor an error", arguments: scripts)
  func throwsNoData(script: CallbackScript) async throws {
    let output = PhotoOutput(outcomes: [.noData], script: script)
    let processor = PhotoCaptureProcessor()

    await #expect(
      throws: PhotoCaptureError.noData,
      "a capture with neither a file nor an error throws PhotoCaptureError.noData"
    ) {
      try await withDeadline(.seconds(2), "capturePhoto(with:)", hint: noDataHint) {
        try await processor.capturePhoto(with: output)
      }
    }
  }

  @Test("Throws undecodableData when the file is not an image", arguments: scripts)
  func throwsUndecodableData(script: CallbackScript) async throws {
    let output = PhotoOutput(outcomes: [.corruptData], script: script)
    let processor = PhotoCaptureProcessor()

    await #expect(
      throws: PhotoCaptureError.undecodableData,
      Comment(
        rawValue: "a file that Image(fileData:) cannot read throws "
          + "PhotoCaptureError.undecodableData: each failure throws its own error")
    ) {
      try await withDeadline(.seconds(2), "capturePhoto(with:)", hint: undecodableHint) {
        try await processor.capturePhoto(with: output)
      }
    }
  }

  @Test(
    "Throws the camera's error even when a file came with it, an image or not",
    arguments: filesWithAnError, scripts)
  func errorWinsOverAFile(outcome: PhotoOutput.Outcome, script: CallbackScript) async throws {
    let output = PhotoOutput(outcomes: [outcome], script: script)
    let processor = PhotoCaptureProcessor()

    await #expect(
      throws: CameraError.sensorFault,
      "the camera reported \(outcome): a file that comes with an error is not to be trusted, whether it reads as an image or not: check the error first"
    ) {
      try await withDeadline(.seconds(2), "capturePhoto(with:)", hint: errorHint) {
        try await processor.capturePhoto(with: output)
      }
    }
  }

  @Test("Two overlapping captures both return their photo")
  func overlappingCapturesBothReturn() async throws {
    let gate = CallbackGate()
    let output = PhotoOutput(outcomes: [.photo(sunset), .photo(harbour)], script: gate.script)
    let processor = PhotoCaptureProcessor()

    // Both captures start before the camera reports anything...
    let (earlier, later) = try await twoHeldCaptures(processor, output, gate)
    // ...then it reports both, in the order they were taken.
    gate.open()
    let second = try await withDeadline(
      .seconds(2), "a second capturePhoto(with:), which began while the first still waited,",
      hint: overlapHint
    ) {
      try await later.value
    }
    let first = try await withDeadline(
      .seconds(2), "the first capturePhoto(with:), still waiting when the second began,",
      hint: overlapHint
    ) {
      try await earlier.value
    }

    #expect(first == sunset, "the first capture's photo goes to the first caller")
    #expect(second == harbour, "the second capture's photo goes to the second caller")
    #expect(output.captureCount == 2, "each call captures exactly once")
  }

  /// The tests in which a later report can reach an earlier continuation. A wrong answer
  /// crashes them, so they run one at a time and a crash names a single test.
  @Suite("One capture after another", .serialized)
  struct OneAfterAnother {
    @Test(
      "The same processor captures again after each kind of failure",
      arguments: [CallbackScript.synchronously, .default])
    func capturesAgain(script: CallbackScript) async throws {
      let output = PhotoOutput(
        outcomes: [.noData, .photo(sunset), .corruptData, .failure(.sensorFault), .photo(harbour)],
        script: script)
      let processor = PhotoCaptureProcessor()

      var outcomes: [Result<Image, any Error>] = []
      for number in 1...5 {
        let outcome = try await withDeadline(
          .seconds(2), "capturePhoto(with:) number \(number)", hint: againHint
        ) {
          do {
            return Result<Image, any Error>.success(try await processor.capturePhoto(with: output))
          } catch {
            return .failure(error)
          }
        }
        outcomes.append(outcome)
      }

      #expect(
        throws: PhotoCaptureError.noData,
        "each failure throws its own error: no file and no error is PhotoCaptureError.noData"
      ) { try outcomes[0].get() }
      #expect(
        try outcomes[1].get() == sunset, "capturePhoto(with:) must return the photo the camera took"
      )
      #expect(
        throws: PhotoCaptureError.undecodableData,
        "a file that is not an image throws PhotoCaptureError.undecodableData"
      ) { try outcomes[2].get() }
      #expect(
        throws: CameraError.sensorFault,
        "each failure throws its own error: the camera's error is thrown as it is"
      ) { try outcomes[3].get() }
      #expect(
        try outcomes[4].get() == harbour,
        "capturePhoto(with:) must return the photo the camera took")
      #expect(output.captureCount == 5, "each call captures exactly once")
    }

    @Test("Answers once when the camera reports the same capture twice", arguments: twiceScripts)
    func answersOnceWhenReportedTwice(script: CallbackScript) async throws {
      let output = PhotoOutput(outcomes: [.photo(sunset)], script: script)
      let processor = PhotoCaptureProcessor()

      let image = try await withDeadline(
        .seconds(2), "capturePhoto(with:)", likelyCause: photoCause(output)
      ) {
        try await processor.capturePhoto(with: output)
      }
      // Keep the processor alive and wait for the second report, so that resuming the same
      // continuation again happens while this test is running.
      let bothReported = await eventually { output.reportCount == 2 }

      #expect(image == sunset, "capturePhoto(with:) must return the photo the camera took")
      #expect(bothReported, "the camera's second report did not finish")
      withExtendedLifetime(processor) {}
    }

    @Test(
      "A repeated report answers nobody later: the next capture takes a new photo",
      arguments: twiceScripts)
    func repeatedReportIsNotKept(script: CallbackScript) async throws {
      let output = PhotoOutput(outcomes: [.photo(sunset), .photo(harbour)], script: script)
      let processor = PhotoCaptureProcessor()

      _ = try await withDeadline(
        .seconds(2), "capturePhoto(with:)", likelyCause: photoCause(output)
      ) {
        try await processor.capturePhoto(with: output)
      }
      _ = await eventually { output.reportCount == 2 }
      let next = try await withDeadline(
        .seconds(2), "the next capturePhoto(with:)", likelyCause: photoCause(output)
      ) {
        try await processor.capturePhoto(with: output)
      }

      #expect(
        next == harbour && output.captureCount == 2,
        "after the camera reported the first capture twice, the next capturePhoto(with:) returned \(next) having asked the camera \(output.captureCount - 1) more time\(output.captureCount == 2 ? "" : "s"): a report that finds nobody waiting is a repeat of one already answered, and answers nobody; each call takes a photo of its own"
      )
    }

    @Test(
      "Each capture is answered, even when the camera reports the same as the time before",
      arguments: everyKindOfOutcome, [CallbackScript.synchronously, .default])
    func sameOutcomeAgain(outcome: PhotoOutput.Outcome, script: CallbackScript) async throws {
      // The last scripted outcome repeats: every capture reports the same thing, once.
      let output = PhotoOutput(outcomes: [outcome], script: script)
      let processor = PhotoCaptureProcessor()

      for number in 1...3 {
        let reportsBefore = output.reportCount
        let result = try await withDeadline(
          .seconds(2), "capturePhoto(with:) number \(number)",
          likelyCause: {
            guard number > 1, output.reportCount > reportsBefore else {
              return photoCause(output)()
            }
            return "the camera reported capture \(number) (\(outcome), the same as capture "
              + "\(number - 1)) and that report answered nobody, so this caller waits for good: "
              + "a report that looks like the one before is not a repeat; two captures can "
              + "end the same way (the same shot, the same failure), and each is answered"
          }
        ) {
          await Result { try await processor.capturePhoto(with: output) }
        }
        switch (outcome, result) {
        case (.photo(let image), .success(let got)):
          #expect(got == image, "capturePhoto(with:) must return the photo the camera took")
        case (.photo, .failure(let error)):
          Issue.record("capture \(number) took \(outcome), and threw \(error)")
        case (_, .success(let got)):
          Issue.record("capture \(number) ended with \(outcome), and returned \(got)")
        case (_, .failure):
          break
        }
      }
      #expect(output.captureCount == 3, "each call captures exactly once")
    }
  }

  @Test(
    "A failed capture answers one caller: the captures still waiting get their own outcome",
    arguments: [
      PhotoOutput.Outcome.failure(.deviceBusy), .photoAndError(sunset, .sensorFault), .noData,
      .corruptData,
    ])
  func failureAnswersOneCaller(first: PhotoOutput.Outcome) async throws {
    let gate = CallbackGate()
    let output = PhotoOutput(outcomes: [first, .photo(harbour)], script: gate.script)
    let processor = PhotoCaptureProcessor()

    // Two captures wait; the first fails, the second succeeds.
    let (earlier, later) = try await twoHeldCaptures(processor, output, gate)
    gate.open()
    let firstResult = try await withDeadline(
      .seconds(2), "the first capturePhoto(with:)", hint: overlapHint
    ) {
      await earlier.result
    }
    let secondResult = try await withDeadline(
      .seconds(2), "the second capturePhoto(with:), whose capture succeeded,", hint: overlapHint
    ) {
      await later.result
    }

    #expect(
      (try? firstResult.get()) == nil,
      "the first capture ended with \(first), so the first caller must not get a photo")
    #expect(
      (try? secondResult.get()) == harbour,
      "the first capture ended with \(first), and the second caller, whose own capture took \(harbour), got \(secondResult) instead: a report answers one caller, the one who has waited longest; one failed capture says nothing about the others, which end as their own reports say"
    )
  }

  @Test(
    "Cancelling one waiting caller does not answer another one", arguments: ["first", "second"])
  func cancelLeavesTheOthers(cancelled: String) async throws {
    let gate = CallbackGate()
    let output = PhotoOutput(outcomes: [.photo(sunset), .photo(harbour)], script: gate.script)
    let processor = PhotoCaptureProcessor()

    let earlier = Task { try await processor.capturePhoto(with: output) }
    try #require(
      await eventually { gate.heldCount == 1 }, "capturePhoto(with:) did not start the capture")
    let later = Task { try await processor.capturePhoto(with: output) }
    try #require(
      await eventually { gate.heldCount == 2 },
      "a second capturePhoto(with:) did not start its capture")
    // One caller gives up while both wait; the camera then reports both captures.
    let (gaveUp, stayed) = cancelled == "first" ? (earlier, later) : (later, earlier)
    gaveUp.cancel()
    gate.open()
    let stayedResult = try await withDeadline(
      .seconds(2),
      "the \(cancelled == "first" ? "second" : "first") capturePhoto(with:), not cancelled,",
      hint: overlapHint
    ) {
      await stayed.result
    }
    _ = try await withDeadline(
      .seconds(2), "the cancelled capturePhoto(with:)", hint: overlapHint
    ) {
      await gaveUp.result
    }

    switch stayedResult {
    case .success(let image):
      #expect(image == sunset || image == harbour)
    case .failure(let error):
      Issue.record(
        "the \(cancelled) caller was cancelled, and the other one, who was not, got \(error) instead of a photo: cancelling one capturePhoto(with:) must answer that caller only (or nobody: the camera reports every capture anyway), never another waiting caller"
      )
    }
  }
}
