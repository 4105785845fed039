import LegacyKit
import Testing
import WorkbookTesting

// The races that the two pickers, 2.1 and 2.2, share: one slot for the waiting caller, a
// new pick that replaces a sheet still on screen, and reports from any thread. Each test of
// theirs makes its picker and calls one of these.

/// A picker under test: its scripted controller and the learner's pick.
struct PickerUnderTest<Choice: Equatable & Sendable>: Sendable {
  let controller: any PresentedPicker
  /// The learner's function, as its messages name it: "pickImage()".
  let operation: String
  let pick: @Sendable () async -> Choice?
}

/// A picker made for one test, from the answers of the simulated user and a script.
typealias MakePicker<Choice: Equatable & Sendable> =
  (_ answers: [PickerAnswer<Choice>], _ script: CallbackScript) -> PickerUnderTest<Choice>

/// How a list of answers reads in a message.
private func listed<Choice>(_ answers: [Choice?]) -> String {
  answers.map { $0.map { "\($0)" } ?? "nil" }.joined(separator: ", ")
}

/// A caller waits on a sheet the user walked away from; two new picks come at once. The
/// second is held inside its resume of the waiting caller while the third runs until it has
/// shown the picker (a second at most), so a pick that takes the waiting caller out in one
/// step and makes its own the one a report reaches in a later one is caught between the
/// two, every run. Every caller must be answered: the waiting one and one of the two nil,
/// the one shown last `chosen`.
func checkTwoPicksAtOnceWhileOneWaits<Choice>(
  _ make: MakePicker<Choice>, chosen: Choice, replacedHint: String,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws {
  let picker = make([.walkAway, .walkAway, .choose(chosen)], .synchronously)
  let (controller, pick) = (picker.controller, picker.pick)
  let probe = ResumeProbeExecutor()
  let waiting = Task(executorPreference: probe) { await pick() }
  try #require(
    await eventually { controller.presentationCount == 1 },
    "\(picker.operation) did not present the picker", sourceLocation: sourceLocation)

  let third = Locked<Task<Choice?, Never>?>(nil)
  probe.onNextResume {
    let presented = controller.presentationCount
    // On a thread of its own, as the second: a pick that waits for a lock the second
    // holds blocks no thread of the pool.
    let task = Task(executorPreference: OneThreadExecutor()) { await pick() }
    third.withLock { $0 = task }
    _ = waitOnThisThread(upTo: .seconds(1)) { controller.presentationCount > presented }
  }
  let second = Task(executorPreference: OneThreadExecutor()) { await pick() }

  // What other tests name on their own, said here without waiting for a deadline.
  guard await eventually({ probe.probesFired == 1 }) else {
    Issue.record(
      Comment(
        rawValue: "a new pick came while a caller waited, and that caller was not answered: "
          + pickCause(controller, presented: 1, replacedHint)()),
      sourceLocation: sourceLocation)
    return
  }
  guard await eventually({ controller.presentationCount == 3 }) else {
    Issue.record(
      """
      two picks came at once while a third caller waited, and the picker was shown \
      \(controller.presentationCount - 1) times for them, not twice: each pick shows it
      """, sourceLocation: sourceLocation)
    return
  }
  let answers = try await withDeadline(
    .seconds(3), "three \(picker.operation) calls, two of them at once",
    likelyCause: {
      "the second pick found the waiting caller and answered it, and only in a later step "
        + "made its own the one a report reaches (stored its continuation, or set the "
        + "delegate); in between, a third pick did the same, and the later step undid it: "
        + "that caller waits for good. Taking the old caller out and putting the new one "
        + "in must be one step, so that whoever comes between sees one or the other"
    },
    sourceLocation: sourceLocation
  ) {
    // The probe started the third pick before the waiting caller could go on.
    let first = await waiting.value
    return [first, await second.value, await third.value?.value]
  }
  #expect(
    answers[0] == nil, "the caller whose sheet was replaced gets nil, as if cancelled",
    sourceLocation: sourceLocation)
  #expect(
    answers.filter { $0 == chosen }.count == 1 && answers.filter { $0 == nil }.count == 2,
    """
    of two picks at once, the one whose sheet was on screen last gets the user's choice and \
    the other nil, as a replaced sheet's caller; they got \(listed(answers))
    """, sourceLocation: sourceLocation)
}

/// Round after round, two picks start on two threads released together, each after a
/// random few hundred nanoseconds, so that one comes between the other's look at the
/// stored caller and its store, whenever those are two steps. Both sheets are walked away
/// from; a third pick then replaces the one on screen and is cancelled, so that both racers
/// must have been answered nil. The rounds go 50 at a time, each thread running its side of
/// one round after another with no wait between, so that a busy machine still runs many.
func checkTwoPicksAtTheSameInstant<Choice>(
  _ make: MakePicker<Choice>, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
  try await raceRounds { left, right in
    let pickers = (0..<50).map { _ in make([.walkAway, .walkAway, .cancel], .synchronously) }
    let lines = pickers.map { _ in StartLine(parties: 2) }
    // Each thread runs its tasks first in, first out: the two sides of a round meet at its
    // start line.
    let racers = [left, right].map { executor in
      zip(pickers, lines).map { picker, line in
        Task(executorPreference: executor) { () -> Choice? in
          line.go(jitter: 0...600)
          return await picker.pick()
        }
      }
    }
    try #require(
      await eventually { pickers.allSatisfy { $0.controller.presentationCount == 2 } },
      "two picks at once did not both present the picker", sourceLocation: sourceLocation)
    let answers = try await withDeadline(
      .seconds(5),
      "two \(pickers[0].operation) calls made at the same instant, then a third, 50 rounds",
      likelyCause: {
        "two picks started at the same instant and both presented, then a third pick "
          + "replaced the sheet on screen, and one of the first two callers was never "
          + "answered: a stored caller was overwritten. Either both picks looked at the "
          + "stored caller before either had stored its own, so each found the slot "
          + "empty, and the later store overwrote the earlier one; or a pick decided from "
          + "the picker's state (isPresented, say), which knows nothing of a caller "
          + "stored but not shown yet. Taking the old caller out and putting the new one "
          + "in must be one step, decided from the stored caller alone"
      },
      sourceLocation: sourceLocation
    ) {
      var answers: [[Choice?]] = []
      for (index, picker) in pickers.enumerated() {
        let last = await picker.pick()
        answers.append([await racers[0][index].value, await racers[1][index].value, last])
      }
      return answers
    }
    guard let wrong = answers.first(where: { !$0.allSatisfy { $0 == nil } }) else {
      return true
    }
    Issue.record(
      """
      two picks at once whose sheets were walked away from, then a third that was \
      cancelled, must all get nil; they got \(listed(wrong))
      """, sourceLocation: sourceLocation)
    return false
  }
}

/// The first pick is answered `chosen` (or, with `cancelledFirst`, its sheet is cancelled).
/// While the report is inside its resume of that caller, a second pick starts and runs until it has shown the picker (a second at most);
/// the user walks away from it, and a third pick replaces it: the second caller must get
/// nil. A report that resumes first and empties the slot in a later step wipes out whoever
/// was stored in between.
func checkPickMadeWhileTheReportAnswers<Choice>(
  _ make: MakePicker<Choice>, chosen: Choice, cancelledFirst: Bool = false, pickHint: String,
  againHint: String, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
  // Reported a little later, once the first caller waits: a report made inside present()
  // finds the caller before it has suspended, and resumes it without a job to hold.
  let firstAnswer: PickerAnswer<Choice> = cancelledFirst ? .cancel : .choose(chosen)
  let firstGets: Choice? = cancelledFirst ? nil : chosen
  let report = cancelledFirst ? "the cancel's report" : "the report"
  let picker = make([firstAnswer, .walkAway, .cancel], .later(.milliseconds(100)))
  let (controller, pick) = (picker.controller, picker.pick)
  let probe = ResumeProbeExecutor()
  let second = Locked<Task<Choice?, Never>?>(nil)
  // Not when the first pick's task starts (that goes through the probe too): when it is
  // resumed, after it has shown the picker.
  probe.onNextResume(when: { controller.presentationCount == 1 }) {
    let task = Task(executorPreference: OneThreadExecutor()) { await pick() }
    second.withLock { $0 = task }
    _ = waitOnThisThread(upTo: .seconds(1)) { controller.presentationCount == 2 }
  }
  let first = try await withDeadline(
    .seconds(2), picker.operation, hint: pickHint, sourceLocation: sourceLocation
  ) {
    await Task(executorPreference: probe) { await pick() }.value
  }
  guard await eventually({ controller.presentationCount == 2 }) else {
    Issue.record(
      Comment(
        rawValue: "a pick made while the report answered the one before never showed the "
          + "picker: " + pickCause(controller, presented: 1, againHint)()),
      sourceLocation: sourceLocation)
    return
  }
  let third = try await withDeadline(
    .seconds(2), "a third \(picker.operation), replacing the second's sheet",
    likelyCause: pickCause(controller, presented: 2, againHint), sourceLocation: sourceLocation
  ) {
    await pick()
  }
  // A third pick that did not show the picker leaves the second's sheet on screen: say so,
  // rather than wait for the second caller.
  guard controller.presentationCount == 3 else {
    Issue.record(
      Comment(
        rawValue: "a third pick, made while the second still waited, returned without "
          + "answering it: " + pickCause(controller, presented: 2, againHint)()),
      sourceLocation: sourceLocation)
    return
  }
  let replaced = try await withDeadline(
    .seconds(2), "a \(picker.operation) made while the report answered the one before",
    likelyCause: {
      "this pick was made while \(report) was answering the pick before it, and its "
        + "caller was never answered when a newer pick replaced its sheet: its continuation "
        + "was gone from the slot. The report resumed the caller it found and emptied the "
        + "slot in a later step, wiping out the continuation stored in between; the "
        + "report's look and its emptying must be one step"
    },
    sourceLocation: sourceLocation
  ) {
    await second.value?.value
  }
  #expect(
    [first, replaced, third] == [firstGets, nil, nil],
    """
    the first pick was \(cancelledFirst ? "cancelled" : "answered \(chosen)"); the one made \
    while that report ran was replaced and must get nil, as must the third, cancelled; they \
    got \(listed([first, replaced, third]))
    """, sourceLocation: sourceLocation)
}
