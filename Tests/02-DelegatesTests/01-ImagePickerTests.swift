import LegacyKit
import Testing
import WorkbookTesting

@testable import Delegates

private let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(200))]
/// Pickers that tell their delegate the same answer twice.
private let twiceScripts: [CallbackScript] = [
  CallbackScript(timing: .synchronously, times: 2),
  .twice,
  CallbackScript(timing: .after(.milliseconds(100)), times: 2),
]

private let beach = Image(name: "beach", width: 4032, height: 3024)
private let dog = Image(name: "dog", width: 1200, height: 1600)

private let pickHint =
  "imagePickerController(_:didFinishPicking:) must resume the stored continuation with the "
  + "image"
private let cancelHint =
  "imagePickerControllerDidCancel(_:) must resume the stored continuation with nil"
private let againHint =
  "the continuation of the first pick is still stored, so this pick's continuation was "
  + "refused or never resumed; take the stored continuation out (leaving nil) when you "
  + "resume it"

private let storeFirstHint =
  "this picker answered inside present(), before it returned, and your continuation was not "
  + "stored yet, so the answer found nobody; store or subscribe before you start: store the "
  + "continuation first, then call present()"
private let replacedHint =
  "presenting again replaced the sheet this caller was waiting on, and a replaced sheet "
  + "never reports; resume the continuation you find stored (with nil) before you store "
  + "the new one"

/// An image picker for the races in `PickerRaces.swift`.
private func makePicker(
  answers: [PickerAnswer<Image>], script: CallbackScript
) -> PickerUnderTest<Image> {
  let controller = ImagePickerController(answers: answers, script: script)
  let picker = ImagePicker(controller: controller)
  return PickerUnderTest(controller: controller, operation: "pickImage()") {
    await picker.pickImage()
  }
}

/// The contract of `ImagePicker.pickImage()`: each path, what the caller sees, and the test
/// that checks it (— where a column does not apply, and why).
///
/// | path | result | stored continuation, presentations | thread, timing |
/// | --- | --- | --- | --- |
/// | picked (inside `present()`, soon, later) | the image: `returnsThePickedImage`, `storesBeforePresenting` | stored before presenting: `storesBeforePresenting`; one presentation: `returnsThePickedImage` | answered while the picker reports, not by work left for later: `answeredDuringTheReport` |
/// | cancelled | nil, not a placeholder: `returnsNilWhenCancelled` | — | — |
/// | the user walks away, the app presents again | the first caller nil, the second its pick, the picker shown for it (not refused): `presentingAgainAnswersBothCallers` | — | — |
/// | pick, cancel, pick on one picker | each its own answer: `servesOnePickAfterAnother` | taken out when resumed: `servesOnePickAfterAnother` | — |
/// | a pick made while the report answers the one before | nil when its sheet is replaced: `pickMadeWhileTheReportAnswers` (it starts inside the report's resume) | the report's take leaves it stored: `pickMadeWhileTheReportAnswers`, and a cancel's: `pickMadeWhileTheCancelAnswers` | — |
/// | the same answer reported twice | one resume, and the next pick gets the user's next choice, presented anew: `answersOnceWhenReportedTwice` | — | — |
/// | the delegate cleared after each pick, set again by the next | — not caught: every caller gets its answer; the echo of a report goes to no delegate, which no caller sees | | |
/// | two reports at the same moment, on two threads | — the picker reports one at a time, on one queue: a read-and-clear split in two steps can only race under threads the tests do not control (see the report of the blind exam) | | |
/// | the delegate freed, or cleared after a pick | — the caller waits, named at every deadline from the picker's `reportsWithNoDelegate` (`pickCause`) | | |
/// | a pick that does not present | — named at every deadline from the presentation count (`pickCause`) | | |
/// | two picks at once while a third waits | the waiting one nil, the one shown last the image, the other nil: `twoPicksAtOnceWhileOneWaits` (the third starts while the second is inside the resume of the waiting caller); two picks released together on two threads, round after round, both answered: `twoPicksAtTheSameInstant` | — | — |
/// | cancelled task (before, during, after) | — pickImage() promises nothing for a cancelled task: the user answers or walks away | | |
@Suite("2.1 Image picker")
struct ImagePickerTests {
  // First in the file on purpose: when several tests fail, the runner shows the first one,
  // and this one tells "stored too late" apart from "never resumed at all".
  @Test("Stores the continuation before presenting: a picker may answer inside present()")
  func storesBeforePresenting() async throws {
    // A picker that answers later works even if the continuation is stored after present()...
    let later = ImagePickerController(answers: [.choose(beach)], script: .later(.milliseconds(300)))
    let laterPicker = ImagePicker(controller: later)
    let first = try await withDeadline(
      .seconds(2), "pickImage()",
      likelyCause: pickCause(later, presented: later.presentationCount, pickHint)
    ) {
      await laterPicker.pickImage()
    }
    #expect(
      first == beach, "pickImage() must return what the user picked, or nil if they cancelled")

    // ...but one that answers before present() returns finds nobody to resume.
    let atOnce = ImagePickerController(answers: [.choose(dog)], script: .synchronously)
    let atOncePicker = ImagePicker(controller: atOnce)
    let second = try await withDeadline(
      .seconds(2), "pickImage() with a picker that answers inside present()",
      hint: storeFirstHint
    ) {
      await atOncePicker.pickImage()
    }
    #expect(second == dog, "pickImage() must return what the user picked, or nil if they cancelled")
  }

  @Test("The pick is answered while the picker reports it, not by work left for later")
  func answeredDuringTheReport() async throws {
    let watch = ResumeWatch()
    let controller = ImagePickerController(
      answers: [.choose(beach), .cancel], script: watch.reportScript)
    let picker = ImagePicker(controller: controller)

    let (results, _, outside) = try await resumedInsideTheReport(
      "pickImage()", hint: pickHint, watch: watch
    ) {
      await picker.pickImage()
    }

    #expect(
      try results.first?.get() == beach,
      "pickImage() must return what the user picked, or nil if they cancelled")
    #expect(outside == 0, resumedAfterTheReport("pickImage()", outside: outside))
  }

  @Test("Returns the image the user picks", arguments: scripts)
  func returnsThePickedImage(script: CallbackScript) async throws {
    let controller = ImagePickerController(answers: [.choose(beach)], script: script)
    let picker = ImagePicker(controller: controller)

    let image = try await withDeadline(
      .seconds(2), "pickImage()",
      likelyCause: pickCause(controller, presented: controller.presentationCount, pickHint)
    ) {
      await picker.pickImage()
    }

    #expect(
      image == beach, "pickImage() must return what the user picked, or nil if they cancelled")
    #expect(controller.presentationCount == 1, "pickImage() must present the picker once")
  }

  @Test("Returns nil when the user cancels", arguments: scripts)
  func returnsNilWhenCancelled(script: CallbackScript) async throws {
    let controller = ImagePickerController(answers: [.cancel], script: script)
    let picker = ImagePicker(controller: controller)

    let image = try await withDeadline(
      .seconds(2), "pickImage()",
      likelyCause: pickCause(controller, presented: controller.presentationCount, cancelHint)
    ) {
      await picker.pickImage()
    }

    #expect(image == nil, "a cancelled pick returns nil, not a placeholder image")
    #expect(controller.presentationCount == 1, "pickImage() must present the picker once")
  }

  @Test("Presenting again after the user walked away answers both callers", arguments: scripts)
  func presentingAgainAnswersBothCallers(script: CallbackScript) async throws {
    let controller = ImagePickerController(answers: [.walkAway, .choose(dog)], script: script)
    let picker = ImagePicker(controller: controller)

    // The first sheet stays on screen and never reports: its caller waits...
    let abandoned = Task { await picker.pickImage() }
    try #require(
      await eventually { controller.presentationCount == 1 },
      "pickImage() did not present the picker")
    // ...until the app presents the picker again, which replaces that sheet.
    let second = try await withDeadline(
      .seconds(2), "a second pickImage()",
      likelyCause: pickCause(controller, presented: controller.presentationCount, againHint)
    ) {
      await picker.pickImage()
    }
    // A second call that is refused, not shown, leaves the first caller to wait for good:
    // say so here, before waiting for that caller, whose hint is about a replaced sheet.
    let presentations = controller.presentationCount
    try #require(
      presentations == 2,
      """
      the second pickImage() returned \(String(describing: second)) without showing the picker, \
      while the first caller was still waiting; that first caller is then never answered, \
      since its sheet will never report. A new pick must not be refused: it takes over \
      from the one still waiting, whose caller is answered nil
      """)
    let first = try await withDeadline(
      .seconds(2), "the first pickImage(), whose sheet was replaced,", hint: replacedHint
    ) {
      await abandoned.value
    }

    #expect(second == dog, "the second sheet's answer goes to the second caller")
    #expect(first == nil, "the caller whose sheet was replaced gets nil, as if cancelled")
  }

  @Test("Two picks at once while a third waits: every caller is answered, one gets the image")
  func twoPicksAtOnceWhileOneWaits() async throws {
    try await checkTwoPicksAtOnceWhileOneWaits(
      makePicker, chosen: beach, replacedHint: replacedHint)
  }

  @Test("Two picks released at the same instant, round after round: both callers are answered")
  func twoPicksAtTheSameInstant() async throws {
    try await checkTwoPicksAtTheSameInstant(makePicker)
  }

  @Test("A pick made while the report answers the last one is answered too")
  func pickMadeWhileTheReportAnswers() async throws {
    try await checkPickMadeWhileTheReportAnswers(
      makePicker, chosen: beach, pickHint: pickHint, againHint: againHint)
  }

  /// The tests in which a later report can reach an earlier continuation. A wrong answer
  /// crashes them, so they run one at a time and a crash names a single test.
  @Suite("One pick after another", .serialized)
  struct OneAfterAnother {
    @Test("The same picker serves one pick after another: pick, cancel, pick", arguments: scripts)
    func servesOnePickAfterAnother(script: CallbackScript) async throws {
      let controller = ImagePickerController(
        answers: [.choose(beach), .cancel, .choose(dog)], script: script)
      let picker = ImagePicker(controller: controller)

      let first = try await withDeadline(
        .seconds(2), "pickImage()",
        likelyCause: pickCause(controller, presented: controller.presentationCount, pickHint)
      ) {
        await picker.pickImage()
      }
      let second = try await withDeadline(
        .seconds(2), "a second pickImage()",
        likelyCause: pickCause(controller, presented: controller.presentationCount, againHint)
      ) {
        await picker.pickImage()
      }
      let third = try await withDeadline(
        .seconds(2), "a third pickImage()",
        likelyCause: pickCause(controller, presented: controller.presentationCount, againHint)
      ) {
        await picker.pickImage()
      }

      #expect(
        first == beach, "pickImage() must return what the user picked, or nil if they cancelled")
      #expect(second == nil, "the user cancelled the second pick")
      #expect(
        third == dog, "pickImage() must return what the user picked, or nil if they cancelled")
      #expect(controller.presentationCount == 3, "each pick presents the picker once")
    }

    @Test("Answers once when the picker reports the same pick twice", arguments: twiceScripts)
    func answersOnceWhenReportedTwice(script: CallbackScript) async throws {
      let controller = ImagePickerController(
        answers: [.choose(beach), .choose(dog)], script: script)
      let picker = ImagePicker(controller: controller)

      let image = try await withDeadline(
        .seconds(2), "pickImage()",
        likelyCause: pickCause(controller, presented: controller.presentationCount, pickHint)
      ) {
        await picker.pickImage()
      }
      // The second report may still be on its way; wait for it, so that resuming the same
      // continuation again happens while this test is running.
      let bothReported = await eventually { controller.reportCount == 2 }

      #expect(
        image == beach, "pickImage() must return what the user picked, or nil if they cancelled")
      #expect(bothReported, "the picker's second report did not finish")

      // The next pick is the user's next choice, whatever came twice before it.
      let next = try await withDeadline(
        .seconds(2), "a second pickImage()",
        likelyCause: pickCause(controller, presented: controller.presentationCount, againHint)
      ) {
        await picker.pickImage()
      }
      #expect(
        next == dog && controller.presentationCount == 2,
        Comment(
          rawValue: "the picker reported the first pick (the beach) twice, and the next "
            + "pickImage() returned \(next.map { "\($0)" } ?? "nil") after "
            + "\(controller.presentationCount - 1) presentation(s) of its own instead of the dog "
            + "the user picked then: a report that finds nobody waiting is an echo of one "
            + "already answered, not an answer kept for the next caller"))
    }
  }
}

extension ImagePickerTests {
  @Test("A pick made while a cancel's report answers the last one is answered too")
  func pickMadeWhileTheCancelAnswers() async throws {
    try await checkPickMadeWhileTheReportAnswers(
      makePicker, chosen: beach, cancelledFirst: true, pickHint: pickHint, againHint: againHint)
  }
}
