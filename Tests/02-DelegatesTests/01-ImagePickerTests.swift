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

/// The contract of `ImagePicker.pickImage()`: each path, what the caller sees, and the test
/// that checks it (— where a column does not apply, and why).
///
/// | path | result | stored continuation, presentations | thread, timing |
/// | --- | --- | --- | --- |
/// | picked (inside `present()`, soon, later) | the image: `returnsThePickedImage`, `storesBeforePresenting` | stored before presenting: `storesBeforePresenting`; one presentation: `returnsThePickedImage` | answered while the picker reports, not by work left for later: `answeredDuringTheReport` |
/// | cancelled | nil, not a placeholder: `returnsNilWhenCancelled` | — | — |
/// | the user walks away, the app presents again | the first caller nil, the second its pick, the picker shown for it (not refused): `presentingAgainAnswersBothCallers` | — | — |
/// | pick, cancel, pick on one picker | each its own answer: `servesOnePickAfterAnother` | taken out when resumed: `servesOnePickAfterAnother` | — |
/// | a pick made while the report answers the one before | nil when its sheet is replaced: `pickMadeWhileTheReportAnswers` (it starts inside the report's resume) | the report's take leaves it stored: `pickMadeWhileTheReportAnswers` | — |
/// | the same answer reported twice | one resume: `answersOnceWhenReportedTwice` | — | — |
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
    try #require(
      controller.presentationCount == 2,
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
    // The first sheet is walked away from; the second and third presentations go to the two
    // new picks, in whichever order they present, and only the last one on screen reports.
    let controller = ImagePickerController(
      answers: [.walkAway, .walkAway, .choose(beach)], script: .synchronously)
    let picker = ImagePicker(controller: controller)
    let probe = ResumeProbeExecutor()
    let waiting = Task(executorPreference: probe) { await picker.pickImage() }
    try #require(
      await eventually { controller.presentationCount == 1 },
      "pickImage() did not present the picker")

    // The second pick answers the waiting caller nil. While it is inside that resume, the
    // third pick starts and runs until it has shown the picker (a second at most): a second
    // pick that took the waiting caller out in one step and stores its own in a later one
    // is caught between the two, every run.
    let third = Locked<Task<Image?, Never>?>(nil)
    probe.onNextResume {
      let presented = controller.presentationCount
      // On a thread of its own, as the second: a pick that waits for a lock the second
      // holds blocks no thread of the pool.
      let task = Task(executorPreference: OneThreadExecutor()) { await picker.pickImage() }
      third.withLock { $0 = task }
      _ = waitOnThisThread(upTo: .seconds(1)) { controller.presentationCount > presented }
    }
    let second = Task(executorPreference: OneThreadExecutor()) { await picker.pickImage() }

    // What other tests name on their own, said here without waiting for a deadline.
    guard await eventually({ probe.probesFired == 1 }) else {
      Issue.record(
        Comment(
          rawValue: "a new pick came while a caller waited, and that caller was not answered: "
            + pickCause(controller, presented: 1, replacedHint)()))
      return
    }
    guard await eventually({ controller.presentationCount == 3 }) else {
      Issue.record(
        """
        two picks came at once while a third caller waited, and the picker was shown \
        \(controller.presentationCount - 1) times for them, not twice: each pick shows it
        """)
      return
    }
    let answers = try await withDeadline(
      .seconds(3), "three pickImage() calls, two of them at once",
      likelyCause: {
        "the second pick found the waiting caller and answered it, and only in a later step "
          + "made its own the one a report reaches (stored its continuation, or set the "
          + "delegate); in between, a third pick did the same, and the later step undid it: "
          + "that caller waits for good. Taking the old caller out and putting the new one "
          + "in must be one step, so that whoever comes between sees one or the other"
      }
    ) {
      // The probe started the third pick before the waiting caller could go on.
      let first = await waiting.value
      return [first, await second.value, await third.value?.value]
    }
    #expect(answers[0] == nil, "the caller whose sheet was replaced gets nil, as if cancelled")
    #expect(
      answers.filter { $0 == beach }.count == 1 && answers.filter { $0 == nil }.count == 2,
      """
      of two picks at once, the one whose sheet was on screen last gets the image and the \
      other nil, as a replaced sheet's caller; they got \(answers.map { $0?.name ?? "nil" })
      """)
  }

  @Test("Two picks released at the same instant, round after round: both callers are answered")
  func twoPicksAtTheSameInstant() async throws {
    // Each round, two picks start on two threads released together, each after a random
    // few hundred nanoseconds, so that one comes between the other's look at the stored
    // caller and its store, whenever those are two steps. Both sheets are walked away
    // from; a third pick then replaces the one on screen and is cancelled, so that both
    // racers must have been answered nil.
    try await raceRounds { left, right in
      let controller = ImagePickerController(
        answers: [.walkAway, .walkAway, .cancel], script: .synchronously)
      let picker = ImagePicker(controller: controller)
      let line = StartLine(parties: 2)
      let racers = [left, right].map { executor in
        Task(executorPreference: executor) { () -> Image? in
          line.go(jitter: 0...600)
          return await picker.pickImage()
        }
      }
      try #require(
        await eventually { controller.presentationCount == 2 },
        "two picks at once did not both present the picker")
      let answers = try await withDeadline(
        .seconds(2), "two pickImage() calls made at the same instant, then a third",
        likelyCause: {
          "two picks started at the same instant and both presented, then a third pick "
            + "replaced the sheet on screen, and one of the first two callers was never "
            + "answered: a stored caller was overwritten. Either both picks looked at the "
            + "stored caller before either had stored its own, so each found the slot "
            + "empty, and the later store overwrote the earlier one; or a pick decided from "
            + "the picker's state (isPresented, say), which knows nothing of a caller "
            + "stored but not shown yet. Taking the old caller out and putting the new one "
            + "in must be one step, decided from the stored caller alone"
        }
      ) {
        let last = await picker.pickImage()
        return [await racers[0].value, await racers[1].value, last]
      }
      guard answers.allSatisfy({ $0 == nil }) else {
        Issue.record(
          """
          two picks at once whose sheets were walked away from, then a third that was \
          cancelled, must all get nil; they got \(answers.map { $0?.name ?? "nil" })
          """)
        return false
      }
      return true
    }
  }

  @Test("A pick made while the report answers the last one is answered too")
  func pickMadeWhileTheReportAnswers() async throws {
    // The first pick is answered. While the report is inside its resume of that caller,
    // a second pick starts and runs until it has shown the picker (a second at most); the
    // user walks away from it, and a third pick replaces it: the second caller must get
    // nil. A report that resumes first and empties the slot in a later step wipes out
    // whoever was stored in between.
    // Reported a little later, once the first caller waits: a report made inside present()
    // finds the caller before it has suspended, and resumes it without a job to hold.
    let controller = ImagePickerController(
      answers: [.choose(beach), .walkAway, .cancel], script: .later(.milliseconds(100)))
    let picker = ImagePicker(controller: controller)
    let probe = ResumeProbeExecutor()
    let second = Locked<Task<Image?, Never>?>(nil)
    // Not when the first pick's task starts (that goes through the probe too): when it is
    // resumed, after it has shown the picker.
    probe.onNextResume(when: { controller.presentationCount == 1 }) {
      let task = Task(executorPreference: OneThreadExecutor()) { await picker.pickImage() }
      second.withLock { $0 = task }
      _ = waitOnThisThread(upTo: .seconds(1)) { controller.presentationCount == 2 }
    }
    let first = try await withDeadline(.seconds(2), "pickImage()", hint: pickHint) {
      await Task(executorPreference: probe) { await picker.pickImage() }.value
    }
    guard await eventually({ controller.presentationCount == 2 }) else {
      Issue.record(
        Comment(
          rawValue: "a pick made while the report answered the one before never showed the "
            + "picker: " + pickCause(controller, presented: 1, againHint)()))
      return
    }
    let third = try await withDeadline(
      .seconds(2), "a third pickImage(), replacing the second's sheet", hint: againHint
    ) {
      await picker.pickImage()
    }
    let replaced = try await withDeadline(
      .seconds(2), "a pickImage() made while the report answered the one before",
      likelyCause: {
        "this pick was made while the report was answering the pick before it, and its "
          + "caller was never answered when a newer pick replaced its sheet: its continuation "
          + "was gone from the slot. The report resumed the caller it found and emptied the "
          + "slot in a later step, wiping out the continuation stored in between; the "
          + "report's look and its emptying must be one step"
      }
    ) {
      await second.value?.value
    }
    #expect(
      [first, replaced, third] == [beach, nil, nil],
      """
      the first pick was answered beach; the one made while that report ran was replaced \
      and must get nil, as must the third, cancelled; they got \
      \([first, replaced, third].map { $0?.name ?? "nil" })
      """)
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
      let controller = ImagePickerController(answers: [.choose(beach)], script: script)
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
    }
  }
}
