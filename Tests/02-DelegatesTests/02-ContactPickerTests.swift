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

private let ada = Contact(name: "Ada Lovelace", phoneNumber: "+44 20 7946 0018")
private let grace = Contact(name: "Grace Hopper", phoneNumber: "+1 202 555 0143")

private let selectHint =
  "contactPicker(_:didSelect:) must resume the stored continuation with the contact"
private let cancelHint =
  "nothing resumes the continuation when the user cancels; contactPickerDidCancel(_:) is "
  + "an optional delegate method, so the compiler never asked you to implement it"

/// Why a cancelled pick was never answered, judged from where the cancel went: to the
/// protocol's do-nothing default, or to the learner's own method, which then left the
/// caller waiting.
private func cancelCause(_ controller: ContactPickerViewController) -> @Sendable () -> String {
  let presented = controller.presentationCount
  let judged = pickCause(controller, presented: presented, "")
  return {
    let cause = judged()
    if !cause.isEmpty { return cause }
    if controller.cancelsHeardByTheDefault > 0 {
      return "the user cancelled, and only the protocol's do-nothing default heard it: "
        + "contactPickerDidCancel(_:) is an optional delegate method, so the compiler never "
        + "asked you to implement it, and a method of any other signature (another label, "
        + "say) is a new method nobody calls"
    }
    return "the user cancelled and your contactPickerDidCancel(_:) ran, but the caller was "
      + "never answered: the cancel path took no continuation, or took it and dropped it "
      + "without resuming it; a cancelled pick still owes its caller an answer"
  }
}
private let storeFirstHint =
  "this picker answered inside present(), before it returned, and your continuation was not "
  + "stored yet, so the answer found nobody; store or subscribe before you start: store the "
  + "continuation first, then call present()"
private let replacedHint =
  "presenting again replaced the sheet this caller was waiting on, and a replaced sheet "
  + "never reports; resume the continuation you find stored (with nil) before you store "
  + "the new one"
private let secondHint =
  "the continuation of the first pick is still stored, so this pick's continuation was "
  + "refused or never resumed; a new pick replaces the sheet on screen: answer the stored "
  + "caller with nil and store the new continuation"

private let cancelledCallerHint =
  "pickContact() promises nothing about what a cancelled caller gets, but it must still be "
  + "answered exactly once: a cancellation handler that resumes the stored continuation and "
  + "leaves it stored lets the next pick (or the user's answer) resume it again, which stops "
  + "the program"

private let againHint =
  "the continuation of the first pick is still stored; take it out (leaving nil) when you "
  + "resume it. Or something else the first pick left behind stops this one: a flag such "
  + "as \"answered\", set by the first pick's report and never reset for the next pick"

/// A contact picker for the races in `PickerRaces.swift`.
private func makePicker(
  answers: [PickerAnswer<Contact>], script: CallbackScript
) -> PickerUnderTest<Contact> {
  let controller = ContactPickerViewController(answers: answers, script: script)
  let picker = ContactPicker(controller: controller)
  return PickerUnderTest(controller: controller, operation: "pickContact()") {
    await picker.pickContact()
  }
}

/// The contract of `ContactPicker.pickContact()`: each path, what the caller sees, and the
/// test that checks it (— where a column does not apply, and why).
///
/// | path | result | stored continuation, presentations | thread, timing |
/// | --- | --- | --- | --- |
/// | selected (inside `present()`, soon, later) | the contact: `returnsTheSelectedContact`, `storesBeforePresenting` | stored before presenting: `storesBeforePresenting` | — |
/// | cancelled (the optional delegate method) | nil: `returnsNilWhenCancelled`; when it is never answered, `cancelCause` tells a cancel only the protocol's default heard (method missing or misspelled) from one the learner's method dropped | — | answered while the picker reports: `answeredDuringTheReport` |
/// | the user walks away, the app presents again | the first caller nil, the second its pick, the picker shown for it (not refused): `presentingAgainAnswersBothCallers` | — | — |
/// | one pick after another on one picker | each its own answer: `servesOnePickAfterAnother` | taken out when resumed: `servesOnePickAfterAnother` | — |
/// | the same answer reported twice | one resume: `answersOnceWhenReportedTwice` | — | — |
/// | the delegate freed, or cleared after a pick | — the caller waits, named at every deadline from the picker's `reportsWithNoDelegate` (`pickCause`) | | |
/// | a pick that does not present | — named at every deadline from the presentation count (`pickCause`) | | |
/// | two picks at once while a third waits | the waiting one nil, the one shown last the contact, the other nil: `twoPicksAtOnceWhileOneWaits` (the third starts while the second is inside the resume of the waiting caller); two picks released together on two threads, round after round, both answered: `twoPicksAtTheSameInstant` | — | — |
/// | a pick made while the report answers the one before | nil when its sheet is replaced: `pickMadeWhileTheReportAnswers` (it starts inside the report's resume) | the report's take leaves it stored: `pickMadeWhileTheReportAnswers`, and a cancel's: `pickMadeWhileTheCancelAnswers` | — |
/// | cancelled task while it waits | not promised (the user's answer, or nil at once), but answered once: the app cancelling it and picking again, the new pick gets its contact: `cancelledCallerAnsweredOnce` | a cancel ends only its own caller's wait, also when it lands as a new pick replaces that caller: `cancelledCallerAnsweredOnce` | — |
/// | cancelled task before, after | — as "while it waits"; a task that has ended runs no cancellation handler | | |
/// | present() left to a Task, after the caller is parked | — not a mistake: the answer goes to the caller stored when the sheet reports, whichever sheet is on screen; picks made at once on two threads may present in either order with the solution too (it presents outside the lock), and every caller is still answered once | | |
/// | the continuation resumed while the lock is held | — not a mistake here: resume only queues the caller, and pickContact() has no cancellation handler that takes the lock (3.4's reason); a pick made meanwhile waits for that resume alone | | |
/// | the user takes their time (2.5 s) | the contact: `slowUserStillGetsTheirContact` | — | no time limit of its own |
/// | a time limit of the answer's own, longer than the tests wait (30 s) | — not caught: `slowUserStillGetsTheirContact` waits 2.5 s, and only a wait longer than the limit could show it; the article and the hints say the pick waits for the user, however long | | |
/// | a select report that looks at the stored caller and empties the slot in two locked steps, with nothing between | — not caught: a pick that lands between them is answered nil and then has its own continuation wiped, but the gap lies inside the answer's own code, between two lock steps that call nothing the test can pause (the cancel's report, which resumes between its steps, is caught: `pickMadeWhileTheCancelAnswers`) | | |
@Suite("2.2 Contact picker")
struct ContactPickerTests {
  // First in the file on purpose: when several tests fail, the runner shows the first one,
  // and this one tells "stored too late" apart from "never resumed at all".
  @Test("Stores the continuation before presenting: a picker may answer inside present()")
  func storesBeforePresenting() async throws {
    // A picker that answers later works even if the continuation is stored after present()...
    let later = ContactPickerViewController(
      answers: [.choose(ada)], script: .later(.milliseconds(300)))
    let laterPicker = ContactPicker(controller: later)
    let first = try await withDeadline(
      .seconds(2), "pickContact()",
      likelyCause: pickCause(later, presented: later.presentationCount, selectHint)
    ) {
      await laterPicker.pickContact()
    }
    #expect(first == ada, "the user selected \(ada)")

    // ...but one that answers before present() returns finds nobody to resume.
    let atOnce = ContactPickerViewController(answers: [.choose(grace)], script: .synchronously)
    let atOncePicker = ContactPicker(controller: atOnce)
    let second = try await withDeadline(
      .seconds(2), "pickContact() with a picker that answers inside present()",
      hint: storeFirstHint
    ) {
      await atOncePicker.pickContact()
    }
    #expect(second == grace, "the user selected \(grace)")
  }

  @Test("The pick is answered while the picker reports it, not by work left for later")
  func answeredDuringTheReport() async throws {
    let watch = ResumeWatch()
    let controller = ContactPickerViewController(answers: [.cancel], script: watch.reportScript)
    let picker = ContactPicker(controller: controller)

    let (results, _, outside) = try await resumedInsideTheReport(
      "pickContact()", hint: cancelHint, likelyCause: cancelCause(controller), watch: watch
    ) {
      await picker.pickContact()
    }

    #expect(try results.first?.get() == nil, "a cancelled pick returns nil")
    #expect(outside == 0, resumedAfterTheReport("pickContact()", outside: outside))
  }

  @Test("Returns the contact the user selects", arguments: scripts)
  func returnsTheSelectedContact(script: CallbackScript) async throws {
    let controller = ContactPickerViewController(answers: [.choose(ada)], script: script)
    let picker = ContactPicker(controller: controller)

    let contact = try await withDeadline(
      .seconds(2), "pickContact()",
      likelyCause: pickCause(controller, presented: controller.presentationCount, selectHint)
    ) {
      await picker.pickContact()
    }

    #expect(
      contact == ada,
      "pickContact() must return the contact the user selected, or nil if they cancelled")
    #expect(controller.presentationCount == 1, "pickContact() must present the picker once")
  }

  @Test("Returns nil when the user cancels", arguments: scripts)
  func returnsNilWhenCancelled(script: CallbackScript) async throws {
    let controller = ContactPickerViewController(answers: [.cancel], script: script)
    let picker = ContactPicker(controller: controller)

    let contact = try await withDeadline(
      .seconds(2), "pickContact()",
      likelyCause: cancelCause(controller)
    ) {
      await picker.pickContact()
    }

    #expect(contact == nil, "a cancelled pick returns nil")
    #expect(controller.presentationCount == 1, "pickContact() must present the picker once")
  }

  @Test("Presenting again after the user walked away answers both callers", arguments: scripts)
  func presentingAgainAnswersBothCallers(script: CallbackScript) async throws {
    let controller = ContactPickerViewController(
      answers: [.walkAway, .choose(grace)], script: script)
    let picker = ContactPicker(controller: controller)

    // The first sheet stays on screen and never reports: its caller waits...
    let abandoned = Task { await picker.pickContact() }
    try #require(
      await eventually { controller.presentationCount == 1 },
      "pickContact() did not present the picker")
    // ...until the app presents the picker again, which replaces that sheet.
    let second = try await withDeadline(
      .seconds(2), "a second pickContact(), while the first still waited,",
      likelyCause: pickCause(controller, presented: 1, secondHint)
    ) {
      await picker.pickContact()
    }
    // A second call that is refused, not shown, leaves the first caller to wait for good:
    // say so here, before waiting for that caller, whose hint is about a replaced sheet.
    let presentations = controller.presentationCount
    try #require(
      presentations == 2,
      """
      the second pickContact() returned \(String(describing: second)) without showing the picker, \
      while the first caller was still waiting; that first caller is then never answered, \
      since its sheet will never report. A new pick must not be refused: it takes over \
      from the one still waiting, whose caller is answered nil
      """)
    let first = try await withDeadline(
      .seconds(2), "the first pickContact(), whose sheet was replaced,", hint: replacedHint
    ) {
      await abandoned.value
    }

    #expect(second == grace, "the second sheet's answer goes to the second caller")
    #expect(first == nil, "the caller whose sheet was replaced gets nil, as if cancelled")
  }

  @Test("Two picks at once while a third waits: every caller is answered, one gets the contact")
  func twoPicksAtOnceWhileOneWaits() async throws {
    try await checkTwoPicksAtOnceWhileOneWaits(makePicker, chosen: ada, replacedHint: replacedHint)
  }

  @Test("Two picks released at the same instant, round after round: both callers are answered")
  func twoPicksAtTheSameInstant() async throws {
    try await checkTwoPicksAtTheSameInstant(makePicker)
  }

  @Test("A pick made while the report answers the last one is answered too")
  func pickMadeWhileTheReportAnswers() async throws {
    try await checkPickMadeWhileTheReportAnswers(
      makePicker, chosen: ada, pickHint: selectHint, againHint: againHint)
  }

  /// The tests in which a later report can reach an earlier continuation. A wrong answer
  /// crashes them, so they run one at a time and a crash names a single test.
  @Suite("One pick after another", .serialized)
  struct OneAfterAnother {
    @Test(
      "The same picker serves one pick after another: cancel, select, cancel, select",
      arguments: scripts)
    func servesOnePickAfterAnother(script: CallbackScript) async throws {
      let controller = ContactPickerViewController(
        answers: [.cancel, .choose(ada), .cancel, .choose(grace)], script: script)
      let picker = ContactPicker(controller: controller)

      var contacts: [Contact?] = []
      for (index, hint) in [cancelHint, againHint, cancelHint, againHint].enumerated() {
        let contact = try await withDeadline(
          .seconds(2), "pickContact() number \(index + 1)", hint: hint
        ) {
          await picker.pickContact()
        }
        contacts.append(contact)
      }

      #expect(
        contacts == [nil, ada, nil, grace],
        "pickContact() must return the contact the user selected, or nil if they cancelled")
      #expect(controller.presentationCount == 4, "each pick presents the picker once")
    }

    @Test("Answers once when the picker reports the same answer twice", arguments: twiceScripts)
    func answersOnceWhenReportedTwice(script: CallbackScript) async throws {
      let controller = ContactPickerViewController(
        answers: [.choose(ada), .cancel], script: script)
      let picker = ContactPicker(controller: controller)

      let selected = try await withDeadline(
        .seconds(2), "pickContact()",
        likelyCause: pickCause(controller, presented: controller.presentationCount, selectHint)
      ) {
        await picker.pickContact()
      }
      // Wait for the second report before picking again, so that it cannot be mistaken for
      // the answer to the next pick, and so that a crash it causes happens in this test.
      let selectedTwice = await eventually { controller.reportCount == 2 }
      let cancelled = try await withDeadline(
        .seconds(2), "a second pickContact()", hint: cancelHint
      ) {
        await picker.pickContact()
      }
      let cancelledTwice = await eventually { controller.reportCount == 4 }

      #expect(
        selected == ada,
        "pickContact() must return the contact the user selected, or nil if they cancelled")
      #expect(
        cancelled == nil,
        "pickContact() must return the contact the user selected, or nil if they cancelled")
      #expect(selectedTwice && cancelledTwice, "the picker's second report did not finish")
    }
  }

  @Test("A user who takes their time still gets the contact they pick")
  func slowUserStillGetsTheirContact() async throws {
    let controller = ContactPickerViewController(
      answers: [.choose(ada)], script: .later(.milliseconds(2_500)))
    let picker = ContactPicker(controller: controller)

    let contact = try await withDeadline(
      .seconds(6), "pickContact(), whose user picks after 2.5 s,",
      likelyCause: pickCause(controller, presented: controller.presentationCount, selectHint)
    ) {
      await picker.pickContact()
    }

    #expect(
      contact == ada,
      """
      the user picked Ada 2.5 s after the sheet appeared, and pickContact() returned \
      \(contact.map { "\($0)" } ?? "nil"): a sheet has no time limit. Only the user's answer, \
      or the app presenting the picker again, ends the wait; a time limit of its own answers \
      nil for a user who is only slow, and their pick then reaches nobody
      """)
  }

  @Test("A caller whose task is cancelled is answered once, and only its own wait ends")
  func cancelledCallerAnsweredOnce() async throws {
    // The app's habit: cancel the task of the pick on screen, then pick again.
    let controller = ContactPickerViewController(
      answers: [.walkAway, .choose(grace)], script: .synchronously)
    let picker = ContactPicker(controller: controller)
    let cancelled = Task { await picker.pickContact() }
    try #require(
      await eventually { controller.presentationCount == 1 },
      "pickContact() did not present the picker")
    cancelled.cancel()
    let next = try await withDeadline(
      .seconds(2), "a pickContact() made after the app cancelled the one on screen",
      hint: cancelledCallerHint
    ) {
      await picker.pickContact()
    }
    // A new pick that did not show the picker leaves the cancelled caller on a sheet that
    // never reports: presentingAgainAnswersBothCallers names that.
    guard controller.presentationCount == 2 else { return }
    _ = try await withDeadline(
      .seconds(2), "a pickContact() whose task was cancelled, then replaced by a new pick",
      hint: cancelledCallerHint
    ) {
      await cancelled.value
    }
    #expect(
      next == grace,
      """
      the app cancelled the task of the pick on screen and picked again, and the new pick \
      got \(next.map { "\($0)" } ?? "nil"), not \(grace), the contact the user selected on \
      its sheet: \(cancelledCallerHint)
      """)

    // A cancel that lands just as a new pick replaces its caller (inside the resume that
    // answers it nil) finds the new pick's continuation stored.
    let replacing = ContactPickerViewController(
      answers: [.walkAway, .choose(grace)], script: .later(.milliseconds(100)))
    let replacingPicker = ContactPicker(controller: replacing)
    let probe = ResumeProbeExecutor()
    let first = Task(executorPreference: probe) { await replacingPicker.pickContact() }
    try #require(
      await eventually { replacing.presentationCount == 1 },
      "pickContact() did not present the picker")
    probe.onNextResume { first.cancel() }
    let second = try await withDeadline(
      .seconds(2), "a pickContact() that replaced a caller whose task was cancelled meanwhile",
      hint: cancelledCallerHint
    ) {
      await replacingPicker.pickContact()
    }
    guard replacing.presentationCount == 2 else { return }
    _ = try await withDeadline(
      .seconds(2), "a pickContact() replaced by a new pick and cancelled",
      hint: cancelledCallerHint
    ) {
      await first.value
    }
    #expect(
      second == grace,
      """
      a new pick replaced a caller, and the app cancelled that caller's task just then; the \
      new pick got \(second.map { "\($0)" } ?? "nil"), not \(grace), the contact the user \
      selected on its sheet: the cancel of the caller that was replaced ended the new \
      pick's wait, the continuation stored by then. A cancel may end only its own caller's \
      wait, and only while that caller is still the one waiting
      """)
  }
}

extension ContactPickerTests {
  @Test("A pick made while a cancel's report answers the last one is answered too")
  func pickMadeWhileTheCancelAnswers() async throws {
    try await checkPickMadeWhileTheReportAnswers(
      makePicker, chosen: ada, cancelledFirst: true, pickHint: selectHint, againHint: againHint)
  }
}
