import Dispatch
import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import MakeItCompile

/// The contract of `AisleScanModel`, the screen that is both delegates of a `ShelfScanner`:
/// each path, what the screen shows, and the test that checks it (— where a column does not
/// apply, and why). The compile check (Swift 6 mode, no warning, no escape hatch) is the
/// runner's; these tests check that the fix kept the screen working and its state on the
/// main thread.
///
/// "At the event" means what the scanner's preview redraw sees: the scanner calls its
/// `onRedraw` on the main queue in the same block as the session delegate's method, right
/// after the method returned, so nothing else can run in between. Every test checks the
/// screen at every event it causes (`AisleRedraws`).
///
/// | path | status line at the event | labels at the event | thread, order |
/// | --- | --- | --- | --- |
/// | start() | scanning: `sessionEventsShowAtOnce`, every test | none: `sessionEventsShowAtOnce` | posted to the main queue after start() returned |
/// | interrupted (a phone call, another app) | paused, with its reason and the count of labels read before it: `sessionEventsShowAtOnce` | those read before it: `sessionEventsShowAtOnce` | — |
/// | interruption ended | scanning: `sessionEventsShowAtOnce` | — | — |
/// | finish() | finished, counting every label read before: `sessionEventsShowAtOnce`, `everyLabelInOrder`; not finished yet when finish() returns, before the camera stopped: `sessionEventsShowAtOnce` | every label: `everyLabelInOrder` | — |
/// | 500 labels, some read twice, in batches | — | every one, in the order read, twice when read twice: `everyLabelInOrder` | handed over one at a time on the decoding queue, a background queue |
/// | 200 labels read while the main thread is busy | counted at the next event: `labelsChangeOnlyOnTheMainThread` | unchanged while the main thread is busy, listed at the next event: `labelsChangeOnlyOnTheMainThread` | never changed on the decoding queue; the decoding queue does not wait for the main thread, not even a while with a time limit (200 such waits add up): `labelsChangeOnlyOnTheMainThread` |
/// | labels and events from background threads, interleaved, 20 rounds | each event with the labels before it: `interleavedFromBackgroundThreads` | in order, across events: `interleavedFromBackgroundThreads` | the camera's side played from threads of the test's own |
/// | labels read with no session event after them (the camera keeps scanning) | — | listed once the main thread is free, without waiting for an event: `labelsListedWhileScanning` | — |
/// | how a label reaches the main actor | — | a block on the main queue, or a new task isolated to the main actor, made inside the method: in line with the scanner's events (both pass); a task that is not isolated to the main actor, or one resumed from an `AsyncStream`, comes after the event: every test with labels; batches drained on the main thread (a drain per batch, or at the next session event) take along labels read after a later event, which the status line then counts (paused after 4 labels when the camera went after 3): `sessionEventsShowAtOnce`, which tells them from labels changed on the decoding queue by holding the main thread while one more label is handed over (only once it failed) | `DispatchQueue.main.sync` blocks the decoding queue while the main thread is busy: `labelsChangeOnlyOnTheMainThread` |
/// | session events off the main queue | — the scanner posts them to the main queue only, so a conformance isolated to the main actor is never used elsewhere | | |
/// | a label method isolated to the main actor whose body only hops | — it runs on the decoding queue though the compiler takes it for main-actor code, but changes nothing there: neither a trap nor a failed cast shows it at run time (Swift 6.3, Linux), so no test can (the compiler accepts the conformance, as it cannot see which queue the scanner calls it on; only the scanner's doc comment says) | | |
/// | the screen released while scanning | — the scanner holds its delegates weakly, and the screen promises nothing then | | |
/// | a label posted with `DispatchQueue.main.asyncAfter(deadline: .now())` | — not a mistake here: libdispatch turns a deadline already passed into a plain `async`, in line with the scanner's events | | |
@MainActor
@Suite("10.4 A main-actor delegate", .serialized)
struct MainActorDelegateTests {
  @Test(
    "Each session event is on the status line when its delegate method returns",
    arguments: [ShelfScanner.Interruption.phoneCall, .cameraInUseByAnotherApp])
  func sessionEventsShowAtOnce(reason: ShelfScanner.Interruption) async throws {
    let scanner = ShelfScanner()
    let model = AisleScanModel(scanner: scanner)
    let redraws = AisleRedraws(scanner, model)
    #expect(model.status == .idle, "a new screen's status line should say idle")

    model.start()
    let before = ["4006381333931", "5012345678900", "7622210449283"]
    scanner.read(before)
    scanner.interrupt(reason)
    scanner.endInterruption()
    let after = ["8711000530085"]
    scanner.read(after)
    model.finish()
    // The camera has not stopped yet: the scanner reports it later, on the main queue, after
    // the labels just read (no event has reached the screen yet: the test holds the main actor).
    if case .finished = model.status {
      Issue.record(
        Comment(
          rawValue: "right after finish() returned, before the scanner reported that the camera "
            + "had stopped, the status line already said \(model.status). It must show the "
            + "count once the camera has stopped (shelfScannerDidStopRunning), when every label "
            + "read before has been listed; a count shown earlier misses the labels still on "
            + "their way"))
    }

    await redraws.expect([
      (.started, .scanning, []),
      (.interrupted(reason), .paused(reason, labelsSoFar: 3), before),
      (.interruptionEnded, .scanning, before),
      (.stopped, .finished(labelCount: 4), before + after),
    ])
  }

  @Test("Lists every label, in the order read, by the next session event")
  func everyLabelInOrder() async throws {
    let scanner = ShelfScanner()
    let model = AisleScanModel(scanner: scanner)
    let redraws = AisleRedraws(scanner, model)

    model.start()
    // 500 labels in 5 batches; every tenth is the label before it, read again.
    let labels = (0..<500).map { index in
      "shelf-\(index % 10 == 9 ? index - 1 : index)"
    }
    for batch in stride(from: 0, to: labels.count, by: 100) {
      scanner.read(Array(labels[batch..<batch + 100]))
    }
    model.finish()

    await redraws.expect([
      (.started, .scanning, []),
      (.stopped, .finished(labelCount: labels.count), labels),
    ])
  }

  @Test("Labels change on the main thread only, never on the scanner's decoding queue")
  func labelsChangeOnlyOnTheMainThread() async throws {
    let scanner = ShelfScanner()
    let model = AisleScanModel(scanner: scanner)
    let redraws = AisleRedraws(scanner, model)
    model.start()
    guard await redraws.expect([(.started, .scanning, [])]) else { return }

    // From here to the look, this test holds the main thread: it does not suspend. The
    // scanner hands the labels over on its decoding queue meanwhile, and says when the label
    // delegate method has returned for the last one. A busy machine may be slow to run the
    // decoding queue, so the test waits for it to call the method (10 seconds at most), then
    // gives the 200 calls a second to return, so nothing hangs: a method that returns at once
    // takes microseconds each, and one that waits for the main thread even a few milliseconds
    // each (with a time limit) takes longer than that.
    let handedOver = DispatchSemaphore(value: 0)
    let read = (0..<200).map { "shelf-\($0)" }
    scanner.read(read)
    scanner.whenReported { handedOver.signal() }
    let calledBy = ContinuousClock.now + .seconds(10)
    while scanner.labelsStarted == 0, ContinuousClock.now < calledBy {
      usleep(1_000)
    }
    let returned = handedOver.wait(timeout: .now() + 1) == .success
    let labelsWhileHeld = model.labels

    #expect(
      returned,
      """
      the scanner's decoding queue had not handed over 200 labels a second after the first \
      came (it got through \(scanner.labelsDelivered)), while the main thread was busy: the \
      method waited for the main thread (DispatchQueue.main.sync, a semaphore, or another \
      wait, even one with a time limit). The camera drops frames while its queue waits, and \
      the day the main thread waits for the scanner, neither goes on. Hand the label over to \
      the main thread and return at once.
      """)
    if returned {
      #expect(
        labelsWhileHeld.isEmpty,
        """
        the labels changed on the scanner's decoding queue: while the main thread was busy \
        elsewhere, shelfScanner(_:didRead:) listed \(labelsWhileHeld) itself, on the \
        background queue the scanner calls it on. The screen's state belongs to the main \
        actor: changed from another thread, it races with the view reading it, and nothing \
        traps to tell you (main-actor code run off the main thread does not always trap). A \
        method the scanner calls on a background queue must not be isolated to the main \
        actor, by its conformance or otherwise, and the state must not leave the main actor \
        either: the method hands the label over to the main actor.
        """)
    }

    // Once the main thread is free, the labels are listed, ahead of the next event.
    scanner.interrupt(.phoneCall)
    await redraws.expect([
      (.started, .scanning, []),
      (.interrupted(.phoneCall), .paused(.phoneCall, labelsSoFar: read.count), read),
    ])
  }

  @Test("Labels and session events from background threads, interleaved, show in order")
  func interleavedFromBackgroundThreads() async throws {
    let scanner = ShelfScanner()
    let model = AisleScanModel(scanner: scanner)
    let redraws = AisleRedraws(scanner, model)
    model.start()

    var expected: [AisleRedraws.Expected] = [(.started, .scanning, [])]
    var listed: [String] = []
    for round in 0..<20 {
      let labels = (0..<(round % 4 + 1)).map { "aisle-\(round)-\($0)" }
      let reason: ShelfScanner.Interruption =
        round.isMultiple(of: 2) ? .phoneCall : .cameraInUseByAnotherApp
      // The camera's side, played from threads of the test's own: labels, an interruption,
      // its end.
      await onAnotherThread {
        scanner.read(labels)
        scanner.interrupt(reason)
      }
      await onAnotherThread { scanner.endInterruption() }
      listed += labels
      expected.append((.interrupted(reason), .paused(reason, labelsSoFar: listed.count), listed))
      expected.append((.interruptionEnded, .scanning, listed))
    }
    await onAnotherThread { scanner.read(["aisle-last"]) }
    model.finish()
    expected.append((.stopped, .finished(labelCount: listed.count + 1), listed + ["aisle-last"]))

    await redraws.expect(expected)
  }

  @Test("Labels are listed while the camera keeps scanning, with no session event after them")
  func labelsListedWhileScanning() async throws {
    let scanner = ShelfScanner()
    let model = AisleScanModel(scanner: scanner)
    let redraws = AisleRedraws(scanner, model)
    model.start()
    guard await redraws.expect([(.started, .scanning, [])]) else { return }

    // Labels read one at a time, and no event after them: the clerk keeps scanning. Once the
    // scanner has handed a label over, whatever the method queued for the main thread is
    // ahead of the test's next trip through it, so the label is listed after that trip.
    var read: [String] = []
    for index in 0..<12 {
      let label = "shelf-\(index)"
      scanner.read([label])
      read.append(label)
      guard await aisleEventually({ scanner.labelsDelivered >= read.count }) else {
        Issue.record(
          Comment(
            rawValue: "the scanner's decoding queue had not handed over label #\(read.count) "
              + "2 seconds after it was read: the label delegate method does not return "
              + "at once"))
        return
      }
      await aisleLetTheMainActorCatchUp()
      guard model.labels == read else {
        Issue.record(
          Comment(
            rawValue: """
              the scanner had handed over \(read.count) labels, one at a time, each delegate \
              call had returned, and the main thread was free, yet the screen listed \
              \(model.labels.count) of them, with no session event since: labels were held \
              back (in a batch until it fills up, or until the next session event) instead of \
              being handed to the main thread as each was read. While the camera keeps \
              scanning, the clerk does not see the labels held back, and the last labels of \
              an aisle show only once the camera stops
              """))
        return
      }
    }
  }
}

// MARK: - Helpers

/// What the screen showed at one moment.
private struct AisleShown: Equatable, CustomStringConvertible {
  var status: AisleScanStatus
  var labels: [String]

  @MainActor
  init(_ model: AisleScanModel) {
    status = model.status
    labels = model.labels
  }

  init(status: AisleScanStatus, labels: [String]) {
    self.status = status
    self.labels = labels
  }

  var description: String { "status \(status) and \(labels.count) labels" }
}

/// What the scanner's preview showed at each session event, in order: the screen, read by the
/// scanner's `onRedraw` in the main-queue block of the event, right after the session
/// delegate's method returned.
@MainActor
private final class AisleRedraws {
  typealias Expected = (
    event: ShelfScanner.SessionEvent, status: AisleScanStatus, labels: [String]
  )

  private(set) var seen: [(event: ShelfScanner.SessionEvent, shown: AisleShown)] = []
  private let model: AisleScanModel
  private let scanner: ShelfScanner

  init(_ scanner: ShelfScanner, _ model: AisleScanModel) {
    self.model = model
    self.scanner = scanner
    scanner.onRedraw = { [weak self, weak model] event in
      guard let self, let model else { return }
      self.seen.append((event, AisleShown(model)))
    }
  }

  /// Waits (2 seconds at most) until the preview has redrawn for `expected.count` events, and
  /// checks that each showed what `expected` says. Records what went wrong at the first event
  /// that did not, and returns whether all did.
  @discardableResult
  func expect(
    _ expected: [Expected], sourceLocation: SourceLocation = #_sourceLocation
  ) async -> Bool {
    let redrawn = await aisleEventually { self.seen.count >= expected.count }
    for (index, wanted) in expected.enumerated() {
      guard index < seen.count else { break }
      let (event, shown) = seen[index]
      guard event == wanted.event else {
        Issue.record(
          Comment(
            rawValue: "the scanner's event #\(index + 1) was \(event), not \(wanted.event): "
              + "start() and finish() should start and stop the scanner as the original "
              + "code did"),
          sourceLocation: sourceLocation)
        return false
      }
      let want = AisleShown(status: wanted.status, labels: wanted.labels)
      guard shown == want else {
        let before = index > 0 ? expected[index - 1].status : .idle
        await aisleLetTheMainActorCatchUp()
        // Late, or never? A label held back on purpose (a delay) gets up to a second.
        for _ in 0..<100 where model.labels.count < want.labels.count {
          try? await Task.sleep(for: .milliseconds(10))
        }
        let finally = AisleShown(model)
        // More labels than were read before the event: listed off the main thread, or held
        // back and listed together later? Only then is it worth a look (the look lists a
        // label of its own).
        let offMain =
          shown.labels.count > want.labels.count
          ? aisleLabelsChangeOffTheMainThread(scanner, model) : nil
        Issue.record(
          Comment(
            rawValue: aisleWhatWentWrong(
              at: event, shown: shown, expected: want, statusBefore: before,
              finally: finally, labelsChangeOffTheMainThread: offMain)),
          sourceLocation: sourceLocation)
        return false
      }
    }
    guard redrawn else {
      Issue.record(
        Comment(
          rawValue: "the scanner posted \(expected.count) session events to the main queue, "
            + "and only \(seen.count) had run there 2 seconds later: something holds the "
            + "main thread, or the label delegate method never returns (the scanner posts "
            + "its events from the decoding queue, behind the labels)"),
        sourceLocation: sourceLocation)
      return false
    }
    return true
  }
}

/// Waits on the main actor until `condition` holds, looking every 5 ms, for at most `limit` of
/// time in which the tests could run: a look that comes far later than asked (a busy
/// machine) counts as 25 ms, and 5 times `limit` of wall-clock time ends the wait anyway.
@MainActor
private func aisleEventually(
  within limit: Duration = .seconds(2), _ condition: () -> Bool
) async -> Bool {
  let clock = ContinuousClock()
  let start = clock.now
  var counted = Duration.zero
  while !condition() {
    guard counted < limit, clock.now - start < limit * 5 else { return false }
    let before = clock.now
    try? await Task.sleep(for: .milliseconds(5))
    counted += min(clock.now - before, .milliseconds(25))
  }
  return true
}

/// Returns once whatever was queued for the main actor before this call has run (as far as
/// a trip through the main queue and a few through the main actor can tell).
@MainActor
private func aisleLetTheMainActorCatchUp() async {
  await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
    DispatchQueue.main.async { done.resume() }
  }
  for _ in 0..<10 { await Task.yield() }
}

/// Whether the label delegate method lists a label itself, on the decoding queue: the main
/// thread is held (this function does not suspend) while the scanner hands over one more
/// label, and once the method has returned, the test looks whether the label is listed
/// already. Nothing on the main thread can have listed it meanwhile, so a yes is certain, and
/// a method that changes the list where it runs says yes every time. Nil when the decoding
/// queue had not handed it over 5 seconds later (a busy machine, or a method that waits for
/// the main thread). Used only to explain a failure: it holds the main thread, and it leaves
/// the label behind.
@MainActor
private func aisleLabelsChangeOffTheMainThread(
  _ scanner: ShelfScanner, _ model: AisleScanModel
) -> Bool? {
  let before = model.labels.count
  let handedOver = DispatchSemaphore(value: 0)
  scanner.read(["probe-label"])
  scanner.whenReported { handedOver.signal() }
  guard handedOver.wait(timeout: .now() + 5) == .success else { return nil }
  return model.labels.count != before
}

/// Why the screen showed `shown` when `event` returned instead of `expected`; `statusBefore`
/// is what the status line said before the event, `finally` what the screen showed once the
/// main actor had caught up after all the events of the test; `labelsChangeOffTheMainThread`
/// what `aisleLabelsChangeOffTheMainThread` saw, when the screen listed too many labels (nil:
/// not known).
private func aisleWhatWentWrong(
  at event: ShelfScanner.SessionEvent, shown: AisleShown, expected: AisleShown,
  statusBefore: AisleScanStatus, finally: AisleShown, labelsChangeOffTheMainThread: Bool?
) -> String {
  let opening =
    "when \(event) returned, the screen should show \(expected), and it showed \(shown)"
  if shown.labels != expected.labels {
    let reordered =
      shown.labels.count == expected.labels.count
      && shown.labels.sorted() == expected.labels.sorted()
    if reordered,
      let first = shown.labels.indices.first(where: { shown.labels[$0] != expected.labels[$0] })
    {
      return """
        \(opening): the labels were listed in another order than the scanner read them in \
        (label #\(first + 1) is \(shown.labels[first]), not \(expected.labels[first])). The \
        scanner hands them over one at a time, in order, on one queue, and each must reach \
        the main actor in that order: queue it for the main thread right there, inside \
        shelfScanner(_:didRead:), not through a task or queue that runs elsewhere first (a \
        Task that is not isolated to the main actor, Task.detached, a global queue)
        """
    }
    if shown.labels.count < expected.labels.count,
      Array(expected.labels.prefix(shown.labels.count)) == shown.labels
    {
      let gone = finally.labels.count < expected.labels.count
      if gone {
        return """
          \(opening): \(expected.labels.count - shown.labels.count) of the labels the scanner \
          had handed over before it posted this event were not listed, and \
          \(expected.labels.count - finally.labels.count) never were, even once the main actor \
          had caught up: they never reached the screen. The screen must be the scanner's label \
          delegate from before startRunning() until the camera has stopped, and stay alive: \
          the scanner holds its delegates weakly (a helper object that nothing else keeps is \
          freed at once), and drops a label read while it has no label delegate
          """
      }
      return """
        \(opening): \(expected.labels.count - shown.labels.count) of the labels the scanner \
        had handed over before it posted this event were not listed yet\
        \(gone ? ", and some never were" : " (they came later)"). A label read before a \
        session event must be listed when the screen shows the event. The scanner hands each \
        label to shelfScanner(_:didRead:) on its decoding queue before it posts the next \
        event to the main queue from there, so a label queued for the main actor right \
        there, inside the method, arrives first; a hop that goes through another task or \
        queue first (a Task that is not isolated to the main actor, Task.detached, a global \
        queue, a delay) arrives after the event
        """
    }
    if shown.labels.count > expected.labels.count,
      Array(shown.labels.prefix(expected.labels.count)) == expected.labels
    {
      let tooEarly = """
        \(opening): the screen already listed \(shown.labels.count - expected.labels.count) \
        labels the scanner read only after it had posted this event, so the screen counts \
        labels read after the event (\(expected.labels.count) were read before it, \
        \(shown.labels.count) were listed)
        """
      if labelsChangeOffTheMainThread == true {
        return """
          \(tooEarly). The labels changed on the scanner's decoding queue: a label the scanner \
          handed over while the main thread was held elsewhere was listed at once, by \
          shelfScanner(_:didRead:) itself, on the background queue the scanner calls it on. \
          The screen's state belongs to the main actor: changed from another thread, it races \
          with the view reading it, and nothing traps to tell you. A method the scanner calls \
          on a background queue must not be isolated to the main actor, by its conformance or \
          otherwise, and the state must not leave the main actor either: the method hands the \
          label over to the main actor
          """
      }
      if labelsChangeOffTheMainThread == false {
        return """
          \(tooEarly). The labels were held back and listed in batches, on the main thread: \
          whatever listed them (a hand-over queued for an earlier label, or a session event) \
          took along labels read after this event, all that had come by the time it ran. A \
          label that waits in a batch is listed late: its count shows at the wrong event, and \
          while the camera keeps scanning it does not show at all. Each label must reach the \
          main thread in line with the scanner's events: after the events posted before it \
          was read, before those posted after
          """
      }
      return """
        \(tooEarly). Either the labels changed on the scanner's \
        decoding queue: they were listed as they came in, on the background queue the scanner \
        calls shelfScanner(_:didRead:) on, while the main thread was busy elsewhere. The \
        screen's state belongs to the main actor: changed from another thread, it races with \
        the view reading it, and nothing traps to tell you. A method the scanner calls on a \
        background queue must not be isolated to the main actor, by its conformance or \
        otherwise, and the state must not leave the main actor either: the method hands the \
        label over to the main actor. Or the labels were handed over in batches: a hand-over \
        queued for an earlier label took along labels read after this event, all that had \
        come by the time it ran on the main thread. Each label must reach the main thread in \
        line with the scanner's events: after the events posted before it was read, before \
        those posted after
        """
    }
    return """
      \(opening): the list should hold each label the scanner read before this event, in the \
      order read, the same label twice when it was read twice, and nothing else
      """
  }
  if shown.status == statusBefore {
    return """
      \(opening): the status line still said \(shown.status), as before the event. The \
      scanner redraws its preview right after each session event, so the status line must \
      change inside the delegate method itself: a Task or a DispatchQueue.main.async made \
      there runs after the method returned, too late. The scanner calls its session delegate \
      on the main queue only, so those methods can stay on the main actor and change the \
      state at once: the conformance can say so
      """
  }
  return """
    \(opening): the session delegate methods should set the status line as the original code \
    did
    """
}
