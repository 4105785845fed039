import Dispatch
import Synchronization
import Testing
import WorkbookTesting

@testable import Channels

private struct GatewayError: Error, Equatable {
  var to: String
}

private func text(_ to: String) -> TextMessage {
  TextMessage(to: to, body: "Your code for \(to)")
}

private func receipt(_ to: String) -> Receipt {
  Receipt(to: to, id: "receipt-\(to)")
}

/// A gateway the tests drive: it records each send, with the time on the test's clock when
/// it started; it fails the messages it is told to, and holds the ones it is told to until
/// the test releases them.
private final class FakeGateway: TextGateway {
  private struct State {
    var sent: [(to: String, at: Duration)] = []
    var failing: Set<String> = []
    var held: Set<String> = []
    var waiting: [String: CheckedContinuation<Void, Never>] = [:]
  }

  private let clock: ManualClock
  private let state = Mutex(State())

  init(clock: ManualClock, failing: Set<String> = [], holding held: Set<String> = []) {
    self.clock = clock
    state.withLock { state in
      state.failing = failing
      state.held = held
    }
  }

  func send(_ message: TextMessage) async throws -> Receipt {
    let (hold, fail) = state.withLock { state in
      state.sent.append((message.to, clock.now.offset))
      return (state.held.contains(message.to), state.failing.contains(message.to))
    }
    if hold {
      await withCheckedContinuation { continuation in
        let released = state.withLock { state in
          guard state.held.contains(message.to) else { return true }
          state.waiting[message.to] = continuation
          return false
        }
        if released { continuation.resume() }
      }
    }
    if fail { throw GatewayError(to: message.to) }
    return receipt(message.to)
  }

  /// Lets a held message's send return.
  func release(_ to: String) {
    let waiting = state.withLock { state in
      state.held.remove(to)
      return state.waiting.removeValue(forKey: to)
    }
    waiting?.resume()
  }

  /// Releases every held message.
  func releaseAll() {
    for to in state.withLock({ Array($0.held) }) { release(to) }
  }

  /// Who was sent to, in order.
  var sent: [String] { state.withLock { $0.sent.map(\.to) } }

  /// When each send started, on the test's clock, in order.
  var startTimes: [Duration] { state.withLock { $0.sent.map(\.at) } }
}

/// A queue on a manual clock, its gateway, and its worker running.
private struct Rig {
  let clock = ManualClock()
  let gateway: FakeGateway
  let queue: TextQueue
  let worker: Started<Void>
  let submitters = SettlingExecutor()

  /// - Parameter afterRun: Called with what the gateway has sent, the moment `run()`
  ///   returns (in the same job, before anything else can run).
  init(
    capacity: Int = 8, failing: Set<String> = [], holding held: Set<String> = [],
    afterRun: (@Sendable ([String]) -> Void)? = nil
  ) {
    let gateway = FakeGateway(clock: clock, failing: failing, holding: held)
    self.gateway = gateway
    let queue = TextQueue(gateway: gateway, capacity: capacity, interval: .seconds(1), clock: clock)
    self.queue = queue
    worker = Started {
      await queue.run()
      afterRun?(gateway.sent)
    }
  }

  /// Submits a text to `to`, and returns once the submitter waits for its receipt (or has
  /// it): submitters started one after another are queued in that order.
  func submit(_ to: String) async -> Started<Receipt> {
    let queue = self.queue
    return await Started.waiting(on: submitters, "submit(\(to))") {
      try await queue.submit(text(to))
    }
  }

  /// True once the worker sleeps on the queue's clock, within 2 seconds.
  func workerSleeps() async -> Bool {
    await eventually(within: .seconds(2)) { clock.sleeperCount >= 1 }
  }

  /// True once `count` sends have started, within 2 seconds.
  func sends(_ count: Int) async -> Bool {
    await eventually(within: .seconds(2)) { gateway.sent.count >= count }
  }

  /// Lets time pass, one interval after another, until `count` sends have started.
  ///
  /// Sends that go on while nothing sleeps on the queue's clock mean the queue waits in real
  /// time, on a clock of its own: that is recorded, and the test stops there, rather than
  /// taking a real second per message.
  func letSend(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    for _ in 0..<count {
      let (clock, gateway) = (self.clock, self.gateway)
      _ = await eventually(within: .seconds(2)) {
        gateway.sent.count >= count || clock.sleeperCount >= 1
      }
      if gateway.sent.count >= count { return }
      guard clock.sleeperCount >= 1 else {
        // Stuck, or waiting on another clock: only the second goes on sending.
        let sentThen = gateway.sent.count
        let goesOn = await eventually(within: .seconds(2)) {
          gateway.sent.count > sentThen && clock.sleeperCount == 0
        }
        guard goesOn else { return }
        Issue.record(
          """
          messages went on being sent, one every while, although nothing slept on the \
          queue's clock and the test let none of its time pass: run() waits the interval \
          on another clock (Task.sleep, ContinuousClock), in real time, instead of on the \
          clock passed to init, whose time the test decides
          """, sourceLocation: sourceLocation)
        throw WaitsInRealTime()
      }
      clock.advance(by: .seconds(1))
    }
  }

  /// Ends the test's queue: releases the gateway, closes the queue, cancels the worker.
  func tearDown() {
    gateway.releaseAll()
    queue.close()
    worker.cancel()
  }
}

/// Ends a test whose queue waits in real time (see `Rig.letSend(_:sourceLocation:)`).
private struct WaitsInRealTime: Error {}

private let receiptHint =
  "submit(_:) must return once run() has sent the message: run() takes the message from "
  + "the stream, sends it, and resumes the submitter's continuation with the receipt"
private let fullHint =
  "a full queue must refuse a new message at once: with bufferingOldest(capacity), yield "
  + "returns .dropped for a message that does not fit, and then submit(_:) throws "
  + "TextQueueError.full (the stream drops it, so nobody else will resume it)"
private let failedSendHint =
  "a failed send must fail only its own message: catch the gateway's error for that "
  + "message, resume its submitter with it, and go on with the next one"
private let closeHint =
  "after close(), run() must send what is queued and return: close() must finish the "
  + "stream, so that run()'s loop ends once the stream is drained"
private let cancelledHint =
  "when the task running run() is cancelled, run() must return and fail every message "
  + "still waiting with CancellationError: the ones in the stream (finish it and drain it) "
  + "and the one run() already took and holds while it waits out the interval; otherwise "
  + "those submitters wait forever (the legacy queue's bug)"

/// The contract of `TextQueue`: each path, what the submitters and the gateway see, and the
/// test that checks it (— where a column does not apply, and why).
///
/// | path | submitter's result, error | gateway (sends, order, times) | `run()` | thread, clock, timing |
/// | --- | --- | --- | --- | --- |
/// | one message | its receipt: `sendsAndReturnsTheReceipt` | sent at once: `sendsAndReturnsTheReceipt` | — | the queue's clock: `sendsAndReturnsTheReceipt` |
/// | a few, one per interval | each its own receipt: `sendsInOrderOnePerInterval` | in order, 0, 1, 2 s: `sendsInOrderOnePerInterval` | — | sleeps on the queue's clock: `sendsInOrderOnePerInterval`; a wait in real time named wherever the test lets time pass (`Rig.letSend`) |
/// | 100 messages | each its own receipt: `sendsAHundredInOrder` | all, once each, in submission order: `sendsAHundredInOrder` | — | — |
/// | a send slower than the interval | — | the next one at once: `slowSendIsFollowedAtOnce` | — | — |
/// | a quiet spell, then two messages | — | the first at once, the second one interval later, no burst: `noBurstAfterAQuietSpell` | — | — |
/// | submitters at once on a nearly full queue | one waits, one `.full`: `twoAtOnceForTheLastPlace` (two threads released together, round after round, the second's start aimed at the first's check (`Rendezvous`), so that a check and a count in two locked steps lets both in) | — | — | two threads of their own, not the pool |
/// | a send that takes 2.5 s | its receipt: `slowSend` | — | — | nothing blocks a thread meanwhile: `slowSend` |
/// | the queue is full | `.full` at once, the waiting ones kept: `fullQueueRefusesTheNewcomer` | the refused one never: `fullQueueRefusesTheNewcomer` | — | — |
/// | a send fails | its own error only: `failedSendFailsOnlyItsMessage` | the next one still sent: `failedSendFailsOnlyItsMessage` | goes on | — |
/// | `close()` | queued ones still get receipts; later ones `.closed`: `closeDrainsThenEnds` | exactly the queued ones, all sent when `run()` returns: `closeDrainsThenEnds` | returns: `closeDrainsThenEnds` | — |
/// | `run()`'s task cancelled | waiting ones `CancellationError`, later ones `.closed`: `cancellingRunFailsTheWaiting` | no more sends: `cancellingRunFailsTheWaiting` | returns: `cancellingRunFailsTheWaiting` | — |
/// | `run()`'s task cancelled before it began | every waiting one `CancellationError`: `runCancelledBeforeItBegins` | none, not even the first: `runCancelledBeforeItBegins` | returns: `runCancelledBeforeItBegins` | — |
/// | a submitter's own task cancelled | — a text, once queued, is sent (the doc comment's choice) | | | |
/// | `run()` called twice | — "call it once": an `AsyncStream` has one reader | | | |
@Suite("6.5 Text queue")
struct TextQueueTests {
  @Test("Sends a message at once and returns its receipt")
  func sendsAndReturnsTheReceipt() async throws {
    let rig = Rig()
    defer { rig.tearDown() }

    let ada = await rig.submit("ada")
    let got = try await ada.value("submit(_:)", hint: receiptHint)

    #expect(got == receipt("ada"), "submit(_:) must return the gateway's receipt")
    #expect(
      rig.gateway.startTimes == [.zero],
      """
      the first message must be sent at once, before any time has passed; the interval \
      is between two sends
      """)
  }

  @Test("Sends the messages in the order they came, at most one per interval")
  func sendsInOrderOnePerInterval() async throws {
    let rig = Rig()
    defer { rig.tearDown() }

    let ada = await rig.submit("ada")
    _ = await rig.sends(1)
    let grace = await rig.submit("grace")
    let linus = await rig.submit("linus")

    let slept = await rig.workerSleeps()
    let sentAtOnce = rig.gateway.sent
    #expect(
      slept && sentAtOnce == ["ada"],
      """
      sent \(sentAtOnce) without waiting: after each send, run() must wait on the queue's \
      clock (clock.sleep) until one interval has passed since that send started, so that \
      at most one message per interval goes out
      """)
    try await rig.letSend(3)
    var receipts: [Receipt] = []
    for (index, submitter) in [ada, grace, linus].enumerated() {
      receipts.append(
        try await submitter.value("submit(_:) of message \(index + 1)", hint: receiptHint))
    }

    #expect(
      rig.gateway.sent == ["ada", "grace", "linus"],
      "the messages must go out in the order they were submitted, first come, first served")
    #expect(
      receipts == [receipt("ada"), receipt("grace"), receipt("linus")],
      "each submitter must get the receipt of its own message")
    #expect(
      rig.gateway.startTimes == [.zero, .seconds(1), .seconds(2)],
      """
      the sends started at \(rig.gateway.startTimes) on the queue's clock, where one per \
      second means 0, 1 and 2 seconds
      """)
  }

  @Test("Sends 100 messages in the order they were submitted, each submitter its own receipt")
  func sendsAHundredInOrder() async throws {
    let rig = Rig(capacity: 128)
    defer { rig.tearDown() }
    let names = (1...100).map { "user\($0)" }

    var submitters: [Started<Receipt>] = []
    for name in names { submitters.append(await rig.submit(name)) }
    try await rig.letSend(names.count)
    var receipts: [Result<Receipt, any Error>] = []
    for (index, submitter) in submitters.enumerated() {
      receipts.append(
        try await submitter.result("submit(_:) of message \(index + 1) of 100", hint: receiptHint))
    }

    let fault = EventOrder.fault(received: rig.gateway.sent, expected: names)
    #expect(
      fault == nil,
      """
      100 messages were submitted one after another, and the gateway got them with a \
      fault: \(fault.map { "\($0)" } ?? ""). Every message must be sent once, first come, \
      first served
      """)
    let mixedUp = zip(names, receipts).first { (try? $0.1.get()) != receipt($0.0) }
    #expect(
      mixedUp == nil,
      """
      the submitter of the message to \(mixedUp?.0 ?? "") got \(mixedUp.map { "\($0.1)" } ?? ""): \
      each submitter must get the receipt of its own message
      """)
  }

  @Test("A send that takes 2.5 seconds holds no thread while the queue waits for it")
  func slowSend() async throws {
    // Longer than the watchdog's patience (1.5 s): a wait that blocks a thread (a semaphore,
    // a dispatch group, a sleep loop), in run(), in submit(_:) or in a task they start, is
    // seen and named.
    let rig = Rig(holding: ["ada"])
    defer { rig.tearDown() }

    let ada = await rig.submit("ada")
    _ = await rig.sends(1)
    let gateway = rig.gateway
    DispatchQueue.global().asyncAfter(deadline: .now() + 2.5) { gateway.release("ada") }
    let got = try await ada.value(
      within: .seconds(6), "submit(_:) of a message whose send takes 2.5 seconds",
      hint: receiptHint)

    #expect(got == receipt("ada"), "submit(_:) must return the gateway's receipt")
  }

  @Test("A send slower than the interval is followed at once by the next one")
  func slowSendIsFollowedAtOnce() async throws {
    let rig = Rig(holding: ["ada"])
    defer { rig.tearDown() }

    let ada = await rig.submit("ada")
    _ = await rig.sends(1)
    let grace = await rig.submit("grace")
    rig.clock.advance(by: .milliseconds(1500))  // ada's send takes 1.5 intervals
    rig.gateway.release("ada")
    _ = try await ada.value("submit(_:)", hint: receiptHint)

    let followed = await rig.sends(2)
    #expect(
      followed,
      """
      the next message waited a whole interval after a send that had already taken longer \
      than the interval: the interval is between the starts of two sends, so wait until \
      one interval after the last send started (clock.sleep(until:)), not for a fresh one
      """)
    if !followed { try await rig.letSend(2) }
    _ = try await grace.value("submit(_:)", hint: receiptHint)
    #expect(
      rig.gateway.startTimes == [.zero, .milliseconds(1500)],
      "the second send must start as soon as the first, slow one has ended")
  }

  @Test("After a quiet spell, the next messages still go out one interval apart")
  func noBurstAfterAQuietSpell() async throws {
    let rig = Rig()
    defer { rig.tearDown() }

    let ada = await rig.submit("ada")
    _ = try await ada.value("submit(_:)", hint: receiptHint)
    rig.clock.advance(by: .seconds(5))  // five intervals with nothing to send
    let grace = await rig.submit("grace")
    let graceAtOnce = await rig.sends(2)
    #expect(
      graceAtOnce,
      """
      after five quiet intervals, grace waited for yet another interval: the last send \
      started five seconds before, so the interval has long passed; wait only for what is \
      left of it, until one interval after the last send started
      """)
    if !graceAtOnce { try await rig.letSend(2) }
    _ = try await grace.value("submit(_:)", hint: receiptHint)
    let linus = await rig.submit("linus")

    let slept = await rig.workerSleeps()
    let sentThen = rig.gateway.sent
    #expect(
      !graceAtOnce || (slept && sentThen == ["ada", "grace"]),
      """
      after five quiet intervals, grace and then linus were sent with no wait between them \
      (sent \(sentThen) at \(rig.gateway.startTimes) on the queue's clock): the interval \
      counts from the start of the last send, not from a timetable of slots, whose unused \
      slots add up while the queue is idle and then let a burst through
      """)
    if !slept { try await rig.letSend(3) } else { rig.clock.advance(by: .seconds(1)) }
    _ = try await linus.value("submit(_:)", hint: receiptHint)
    #expect(
      !graceAtOnce || rig.gateway.startTimes == [.zero, .seconds(5), .seconds(6)],
      """
      the sends started at \(rig.gateway.startTimes) on the queue's clock, where a message \
      at once, one five seconds later and one more right behind it mean 0, 5 and 6 seconds
      """)
  }

  @Test("A full queue refuses a new message at once, and keeps the ones waiting")
  func fullQueueRefusesTheNewcomer() async throws {
    let rig = Rig(capacity: 2, holding: ["ada"])
    defer { rig.tearDown() }

    let ada = await rig.submit("ada")  // being sent: not waiting in the queue
    _ = await rig.sends(1)
    let grace = await rig.submit("grace")
    let linus = await rig.submit("linus")
    let barbara = await rig.submit("barbara")  // one too many

    // Only grace waited when linus came: a refusal then counted ada, who is being sent.
    let refusedWithRoom = linus.isFinished && !grace.isFinished
    #expect(
      !refusedWithRoom,
      """
      a queue of capacity 2 refused linus while only grace was waiting: ada's message was \
      being sent, no longer waiting, so it must not take one of the places
      """)
    if refusedWithRoom { return }
    let droppedAWaitingOne = grace.isFinished || linus.isFinished
    #expect(
      !droppedAWaitingOne,
      """
      a full queue dropped a message that was already waiting, to make room for the new \
      one: refuse the newcomer instead (bufferingOldest, not bufferingNewest)
      """)
    if droppedAWaitingOne { return }
    // ada's send has not returned (the gateway holds it), so grace and linus must still be
    // waiting in the queue, and it is full: only a message taken out early makes room.
    let refused = try await barbara.result(
      "submit(_:) to a full queue",
      hint: "ada's send was still in progress and grace and linus were waiting, so a queue of "
        + "capacity 2 was full, and barbara was not refused. \(fullHint). If it already does, "
        + "did a message leave the queue before ada's send had ended? A send started in a "
        + "Task of its own lets the worker take the next message at once, so sends overlap")
    #expect(
      throws: TextQueueError.full,
      "a message that does not fit must be refused with TextQueueError.full"
    ) {
      try refused.get()
    }

    rig.gateway.release("ada")
    try await rig.letSend(3)
    for (index, submitter) in [ada, grace, linus].enumerated() {
      _ = try await submitter.value("submit(_:) of message \(index + 1)", hint: receiptHint)
    }
    #expect(
      rig.gateway.sent == ["ada", "grace", "linus"],
      "the messages that fitted must still be sent, in order, and the refused one never")
  }

  @Test("Two submitters arriving at the same instant on a queue with room for one: one is refused")
  func twoAtOnceForTheLastPlace() async throws {
    // Each round, a queue of capacity 1 is sending one message (the gateway holds it), so
    // one place is free; two submitters on two threads of their own ask for it, released
    // together, the second a tuned time after the first (see Rendezvous): whichever got the
    // place, the next round moves the second's start toward the instant where the other one
    // would have, so the two checks keep meeting. Whatever the interleaving, one must wait
    // and the other be refused: a check of the room and its taking made in two steps lets
    // both in once one comes between the other's two, which the aimed rounds make happen.
    try await withOneStressAtATime {
      let rendezvous = Rendezvous()
      let executors = [OneThreadExecutor(), OneThreadExecutor()]
      // So many rounds, or so much time: a machine too busy to finish the rounds does fewer,
      // which can let the gap go unseen but never fails a correct answer.
      let rounds = stressAmount(grading: 150, verify: 1_500)
      let budget: Duration = stressAmount(grading: .milliseconds(1_500), verify: .seconds(8))
      let clock = ContinuousClock()
      let end = clock.now + budget
      for _ in 1...rounds where clock.now < end {
        let rig = Rig(capacity: 1, holding: ["ada"])
        defer { rig.tearDown() }
        let queue = rig.queue
        _ = Started(on: rig.submitters) { try await queue.submit(text("ada")) }
        try #require(
          await soon { rig.gateway.sent.count >= 1 },
          "run() did not start sending the first message")
        rendezvous.reset()
        let finished = Locked<[(party: Int, result: Result<Receipt, any Error>)]>([])
        for (party, to) in ["grace", "linus"].enumerated() {
          Task(executorPreference: executors[party]) {
            rendezvous.arrive(as: party)
            let result = await Result { try await queue.submit(text(to)) }
            finished.withLock { $0.append((party, result)) }
          }
        }
        guard await soon({ !finished.value.isEmpty }) else {
          Issue.record(
            """
            a queue of capacity 1 was sending one message and had one place free; two \
            submitters asked for it at the same instant, and both were let in, so two \
            messages waited where one fits: each looked at the room left before the other \
            had taken it. The look and the taking must be one step, so that of two \
            submitters arriving together exactly one finds the place free
            """)
          return
        }
        let refused = finished.value[0]
        guard case .failure(let error) = refused.result, error as? TextQueueError == .full else {
          Issue.record(
            """
            of two submitters asking at once for the one free place, one must wait and the \
            other be refused with TextQueueError.full; one ended with \(refused.result) while \
            ada's send was still held
            """)
          return
        }
        // The other one waits for its place: ada's send is still held. Both parties must have
        // gone on from the rendezvous before the next round resets it.
        guard await soon({ rendezvous.isOver }) else { return }
        if finished.value.count > 1 {
          Issue.record(
            """
            of two submitters asking at once for the one free place, one must wait and the \
            other be refused; both ended (\(finished.value.map(\.result))) while ada's send \
            was still held, so the free place was refused too
            """)
          return
        }
        // The refused one asked second: the one that got the place came first.
        rendezvous.learn(secondCameFirst: refused.party == 0)
      }
    }
  }

  @Test("A failed send fails only its own message")
  func failedSendFailsOnlyItsMessage() async throws {
    let rig = Rig(failing: ["grace"])
    defer { rig.tearDown() }

    let ada = await rig.submit("ada")
    _ = await rig.sends(1)
    let grace = await rig.submit("grace")
    let linus = await rig.submit("linus")
    try await rig.letSend(3)

    let first = try await ada.result("submit(_:) of message 1", hint: failedSendHint)
    let second = try await grace.result("submit(_:) of message 2", hint: failedSendHint)
    let third = try await linus.result("submit(_:) of message 3", hint: failedSendHint)
    #expect(
      (try? first.get()) == receipt("ada"),
      "the message before a failed one must get its receipt")
    #expect(
      throws: GatewayError(to: "grace"),
      "the failed message's submitter must get the gateway's error"
    ) {
      try second.get()
    }
    #expect(
      (try? third.get()) == receipt("linus"),
      "the message after a failed one got \(third): \(failedSendHint)")
  }

  @Test("After close(), the queued messages are still sent, run() returns, new ones are refused")
  func closeDrainsThenEnds() async throws {
    let sentAtReturn = Locked<[String]?>(nil)
    let rig = Rig(holding: ["ada"]) { sent in sentAtReturn.withLock { $0 = sent } }
    defer { rig.tearDown() }

    let ada = await rig.submit("ada")
    _ = await rig.sends(1)
    let grace = await rig.submit("grace")
    rig.queue.close()
    let late = await rig.submit("linus")
    let refused = try await late.result("submit(_:) after close()", hint: closeHint)
    #expect(
      throws: TextQueueError.closed,
      "a message submitted after close() must be refused with .closed"
    ) {
      try refused.get()
    }

    rig.gateway.release("ada")
    try await rig.letSend(2)
    let first = try await ada.result("submit(_:) of message 1", hint: closeHint)
    let second = try await grace.result("submit(_:) of message 2", hint: closeHint)
    #expect(
      (try? first.get()) == receipt("ada") && (try? second.get()) == receipt("grace"),
      """
      close() must still send the messages already queued; they got \(first) and \(second)
      """)
    _ = try await rig.worker.result("run() after close()", hint: closeHint)
    #expect(
      rig.gateway.sent == ["ada", "grace"],
      "after close(), exactly the messages queued before it must be sent")
    #expect(
      sentAtReturn.value == ["ada", "grace"],
      """
      run() returned after close() when the gateway had been sent \
      \(sentAtReturn.value ?? []), not every message queued before close(): run() returns \
      once what was queued has been sent, not before
      """)
  }

  @Test("Cancelling run() fails every message still waiting, and refuses new ones")
  func cancellingRunFailsTheWaiting() async throws {
    let rig = Rig()
    defer { rig.tearDown() }

    let ada = await rig.submit("ada")
    _ = await rig.sends(1)
    let grace = await rig.submit("grace")
    let linus = await rig.submit("linus")
    _ = try await ada.value("submit(_:)", hint: receiptHint)
    _ = await rig.workerSleeps()

    rig.worker.cancel()
    // A wait on the queue's clock that goes on after the cancel was not reached by it.
    let clock = rig.clock
    let reached = await eventually(within: .seconds(1)) { clock.sleeperCount == 0 }
    let hint =
      reached
      ? cancelledHint
      : "run()'s task was cancelled, and the wait on the queue's clock went on as if nothing "
        + "had happened: the cancellation never reached the code that waits. Work done in a "
        + "task of its own (Task { }), even one whose value run() awaits, is not cancelled "
        + "with the task that runs run(); " + cancelledHint
    let waiting = [
      try await grace.result(
        "submit(_:) of a message waiting when run() was cancelled", hint: hint),
      try await linus.result(
        "submit(_:) of a message waiting when run() was cancelled", hint: hint),
    ]
    for outcome in waiting {
      #expect(
        throws: CancellationError.self,
        """
        a message still waiting when run() was cancelled got \(outcome): a cancelled run() \
        must not send any more messages, and must fail the waiting ones with \
        CancellationError
        """
      ) {
        try outcome.get()
      }
    }
    _ = try await rig.worker.result("run() after its task was cancelled", hint: cancelledHint)
    let late = await rig.submit("barbara")
    let refused = try await late.result("submit(_:) after run() was cancelled", hint: cancelledHint)
    #expect(
      throws: TextQueueError.closed,
      "once run() has stopped, a new message must be refused with .closed, not wait forever"
    ) {
      try refused.get()
    }
    #expect(rig.gateway.sent == ["ada"], "a cancelled run() must not send any more messages")
  }

  @Test("A run() whose task was cancelled before it began sends nothing, and fails what waits")
  func runCancelledBeforeItBegins() async throws {
    let clock = ManualClock()
    let gateway = FakeGateway(clock: clock)
    let queue = TextQueue(gateway: gateway, capacity: 8, interval: .seconds(1), clock: clock)
    let submitters = SettlingExecutor()
    let ada = await Started.waiting(on: submitters, "submit(ada)") {
      try await queue.submit(text("ada"))
    }
    let grace = await Started.waiting(on: submitters, "submit(grace)") {
      try await queue.submit(text("grace"))
    }

    // The app's task was cancelled (the user signed out) just before the worker began.
    let worker = Started {
      withUnsafeCurrentTask { $0?.cancel() }
      await queue.run()
    }
    _ = try await worker.result("run() in a task cancelled before it began", hint: cancelledHint)
    for (name, submitter) in [("ada", ada), ("grace", grace)] {
      let outcome = try await submitter.result(
        "submit(\(name)) queued before a cancelled run()", hint: cancelledHint)
      #expect(
        throws: CancellationError.self,
        """
        a message waiting for a run() that was cancelled before it began got \(outcome): a \
        cancelled run() sends nothing, not even the first message it takes, before which no \
        interval's sleep throws to tell it; it fails every waiting one with CancellationError
        """
      ) {
        try outcome.get()
      }
    }
    #expect(gateway.sent.isEmpty, "a cancelled run() sent \(gateway.sent); it must send nothing")
  }
}
