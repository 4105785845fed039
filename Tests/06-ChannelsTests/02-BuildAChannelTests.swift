import Foundation
import Testing
import WorkbookTesting

@testable import Channels

private let sendHint =
  "a waiting send(_:) is resumed when a receiver takes its element, or makes room for it "
  + "in the buffer"
private let receiveHint =
  "a waiting receive() is resumed when a sender hands it an element, or with nil when the "
  + "channel is closed"
private let closeHint =
  "close() must resume everyone who waits: receivers with nil (once the buffer is empty), "
  + "senders by throwing ChannelClosedError"
private let cancelHint =
  "a cancelled send or receive was never resumed: cancelling a waiting send or receive must "
  + "resume it at once with CancellationError (withTaskCancellationHandler), after taking it "
  + "out of the queue of waiters"
private let alreadyCancelledHint =
  "the task was cancelled before the call stored its continuation, so onCancel ran first "
  + "and found nothing; check Task.isCancelled in the same locked step that stores it"

/// Receives until `channel` ends, each receive within the deadline.
private func drain(_ channel: Channel<Int>) async throws -> [Int] {
  var received: [Int] = []
  while let element = try await withDeadline(
    .seconds(2), "receive() on a closed channel", hint: closeHint,
    { try await channel.receive() })
  {
    received.append(element)
  }
  return received
}

/// What differs between the elements whose send returned and those received, in words:
/// an element received whose send threw, or one sent and never received.
func sentAndReceived(_ sent: [Int], _ received: [Int]) -> String {
  /// The elements of `these` left once each of `those` has taken away one equal to it.
  func leftOver(_ these: [Int], without those: [Int]) -> [Int] {
    var left = these
    for element in those { left.firstIndex(of: element).map { _ = left.remove(at: $0) } }
    return left
  }
  func few(_ elements: [Int]) -> String {
    elements.prefix(3).map(String.init).joined(separator: ", ")
  }
  let unsent = leftOver(received, without: sent)
  let lost = leftOver(sent, without: received)
  var parts = ["\(sent.count) sends returned, \(received.count) elements received"]
  if !unsent.isEmpty {
    parts.append(
      "\(unsent.count) element(s) received whose send threw (\(few(unsent))): a send that ends "
        + "with an error must not have delivered its element")
  }
  if !lost.isEmpty {
    parts.append("\(lost.count) element(s) whose send returned never received (\(few(lost)))")
  }
  return parts.joined(separator: "; ")
}

/// Sends `element` into a channel that has room for it, within the deadline.
private func fill(_ channel: Channel<Int>, with element: Int) async throws {
  try await withDeadline(
    .seconds(2), "send(_:) into a channel with room",
    hint: "a send must not wait while fewer than `capacity` elements are buffered"
  ) {
    try await channel.send(element)
  }
}

/// Lets a receiver wait on a thread of its own, closes the channel from another thread,
/// and has the probe cancel the receiver from a third one while close() is inside resume.
/// Returns false if that cancellation had to wait for the channel's lock (the probe then
/// records why).
func cancelWhileClosing(
  capacity: Int, round: Int, servingOneFirst: Bool = false,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> Bool {
  let channel = Channel<Int>(capacity: capacity)
  if servingOneFirst {
    // One receiver served first, as in a channel that has been in use: close() must leave
    // its line of waiting receivers fit for the cancel that comes after it.
    let served = Task { try await channel.receive() }
    try await Task.sleep(for: .milliseconds(50))  // It waits for an element by now.
    try await withDeadline(
      .seconds(2), "round \(round): send(_:) to a waiting receiver", hint: sendHint,
      checksPool: false, sourceLocation: sourceLocation
    ) {
      try await channel.send(0)
      _ = try await served.value
    }
  }
  let receiving = Locked(false)
  let closed = Locked(false)
  Thread.detachNewThread {
    while !receiving.value { usleep(1_000) }
    // Let the receive() store its continuation (it runs on its own, idle thread).
    usleep(50_000)
    channel.close()
    closed.withLock { $0 = true }
  }
  let clock = ContinuousClock()
  let start = clock.now
  let received = try await withCancellationRacingResume(
    .seconds(2), "receive() resumed by close() from another thread", hint: closeHint,
    sourceLocation: sourceLocation
  ) {
    receiving.withLock { $0 = true }
    return try await channel.receive()
  }
  let elapsed = clock.now - start
  // Cancelled just after it was resumed, the receive returns what it was given.
  await eventually("round \(round): close() to return", sourceLocation: sourceLocation) {
    closed.value
  }
  #expect(
    received == nil, "round \(round): a receive() ended by close() returns nil",
    sourceLocation: sourceLocation)
  // The probe waits a second for a cancellation stuck behind the lock.
  return elapsed < .milliseconds(900)
}

/// Before a test that cancels tasks while others resume them: if resuming (in close(), or
/// in a hand-off either way) happens under the lock that onCancel takes, those tests would
/// deadlock the runtime's threads for good (and every other test with them). The probe reports that safely instead, and they end early.
func resumesOutsideTheLock(
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> Bool {
  guard try await cancelWhileClosing(capacity: 0, round: 1, sourceLocation: sourceLocation)
  else { return false }
  for handOff in [HandOff.receiverWaits, .senderWaits] {
    guard try await cancelWhileHandingOff(handOff, round: 1, sourceLocation: sourceLocation)
    else { return false }
  }
  return true
}

/// The contract of `Channel`: each path, what senders and receivers see, and the test that
/// checks it (— where a column does not apply, and why). Tests whose name is in the stress
/// file are in `02-BuildAChannelStressTests.swift`.
///
/// | path | send's result | receive's result, order | waiting, resources | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | rendezvous (capacity 0) | returns once a receiver took it: `rendezvousSendWaits` | the element | — | — |
/// | buffered (capacity N) | N at once, the next waits: `bufferedSendWaitsWhenFull` | — | — | — |
/// | an empty channel | — | waits for a sender: `receiveWaits` | — | — |
/// | one producer | — | its order: `fifo` | — | — |
/// | several waiting senders or receivers | served first come, first served: `waitingSendersInOrder` | `waitingReceiversInOrder` | — | — |
/// | an element handed out (buffered, or by a waiting sender) | — | — | not kept by the channel: `receivedElementsAreReleased` | — |
/// | many producers and consumers | — | each element exactly once, each producer's order: `manyProducersAndConsumers` | — | — |
/// | `close()` | waiting senders throw `ChannelClosedError`: `closeFailsWaitingSenders`; later ones too, nothing sent: `sendAfterClose` | the buffer, then `nil`: `closeDrainsThenEnds`; waiting receivers `nil`: `closeEndsWaitingReceivers` | — | from another thread mid-traffic: `closeFromAnotherThread` |
/// | a waiting receiver is cancelled | — | `CancellationError`, takes nothing: `cancelWaitingReceiver` | the next element goes to the next receiver: `cancelWaitingReceiver`; two arriving at the same instant are told apart: `receiversArrivingTogether` | while `close()` resumes it, no deadlock: `cancelWhileResuming`; while `send(_:)` hands it an element, or it hands one to a waiting sender: `handOffResumesOutsideTheLock` |
/// | a waiting sender is cancelled | `CancellationError`, not sent: `cancelWaitingSender` | — | the others keep their order: `cancelMiddleSender` | — |
/// | the iterating task is cancelled | — | the loop throws `CancellationError`: `cancelledIterationThrows` | — | — |
/// | the task is cancelled before the call | `CancellationError`, no wait: `alreadyCancelled`; with room too, nothing sent: `alreadyCancelledWithRoom` | `CancellationError`, no wait: `alreadyCancelled`; with an element buffered too, nothing taken: `alreadyCancelledWithRoom` | — | — |
/// | cancelled as the hand-off happens | sent once if it returned, never if it threw: `cancelSenderRacingHandOff` | the element or nothing: `cancelReceiverRacingHandOff` | nothing lost: both | — |
/// | cancels at random moments, from other threads | nothing lost or duplicated: `randomCancellation`, `cancelFromOtherThreads` | | | |
/// | cancelled right after any look at its cancellation (between a check and the store) | `CancellationError`: `cancelledRightAfterALook` | `CancellationError`: `cancelledRightAfterALook` | — | — |
/// | a sender arrives between a receive's look at the buffer and its wait, taken in two locked steps | — both then wait beside each other; the gap lies inside the answer's own code, between two lock steps that call nothing the test can pause, and the stress tests land there only by chance (not caught) | | | |
@Suite("6.2 Build a channel")
struct BuildAChannelTests {
  // MARK: Rendezvous and buffering

  @Test("A rendezvous send waits until a receiver takes the element")
  func rendezvousSendWaits() async throws {
    let channel = Channel<Int>(capacity: 0)
    let sending = Started { try await channel.send(1) }
    try await expectStillWaiting(sending, "send(_:) returned with nobody receiving (capacity 0)")

    let received = try await withDeadline(.seconds(2), "receive()", hint: receiveHint) {
      try await channel.receive()
    }

    #expect(received == 1)
    try await sending.value("send(_:)", hint: sendHint)
  }

  @Test("A receive waits until a sender comes", arguments: [0, 2])
  func receiveWaits(capacity: Int) async throws {
    let channel = Channel<Int>(capacity: capacity)
    let receiving = Started { try await channel.receive() }
    try await expectStillWaiting(receiving, "receive() returned from an empty channel")

    try await withDeadline(.seconds(2), "send(_:) to a waiting receiver", hint: sendHint) {
      try await channel.send(2)
    }

    #expect(try await receiving.value("receive()", hint: receiveHint) == 2)
  }

  @Test(
    "A buffered channel takes `capacity` elements without waiting; the next send waits",
    arguments: [1, 3])
  func bufferedSendWaitsWhenFull(capacity: Int) async throws {
    let channel = Channel<Int>(capacity: capacity)
    for element in 1...capacity { try await fill(channel, with: element) }
    let sending = Started { try await channel.send(capacity + 1) }
    try await expectStillWaiting(
      sending, "send(_:) returned although the buffer already held `capacity` elements")

    let first = try await withDeadline(.seconds(2), "receive()", hint: receiveHint) {
      try await channel.receive()
    }
    try await sending.value("send(_:) into a full buffer", hint: sendHint)
    channel.close()

    let order =
      "a receiver takes the buffer's oldest element, and the waiting sender's element moves "
      + "in behind what is already there, so elements come out in the order they were sent"
    #expect(
      first == 1,
      "the first receive() from a full buffer holding 1...\(capacity) got \(first.map(String.init) ?? "nil"): \(order)"
    )
    let rest = try await drain(channel)
    #expect(
      rest == Array(2...capacity + 1),
      Comment(
        rawValue: (rest + [first ?? 0]).sorted() == Array(1...capacity + 1)
          ? "after the first receive(), the rest came out as \(rest), out of order: \(order)"
          : "close() must not drop buffered elements, nor the waiting sender's element that moved in"
      ))
  }

  @Test("One producer's elements come out in the order it sent them", arguments: [0, 1, 5])
  func fifo(capacity: Int) async throws {
    let channel = Channel<Int>(capacity: capacity)
    let producing = Started {
      for element in 0..<200 { try await channel.send(element) }
      channel.close()
    }

    let received = try await withDeadline(.seconds(2), "iterating the channel", hint: receiveHint) {
      var received: [Int] = []
      for try await element in channel { received.append(element) }
      return received
    }

    #expect(received == Array(0..<200))
    try await producing.value("the producer", hint: sendHint)
  }

  @Test("Senders that wait are served in the order they started waiting", arguments: [0, 1])
  func waitingSendersInOrder(capacity: Int) async throws {
    let channel = Channel<Int>(capacity: capacity)
    if capacity == 1 { try await fill(channel, with: 0) }
    var senders: [Started<Void>] = []
    for element in 1...3 {
      senders.append(Started { try await channel.send(element) })
      try await expectStillWaiting(senders.last!, "send(_:) returned into a full channel")
    }

    var received: [Int?] = []
    for _ in 0..<(3 + capacity) {
      received.append(
        try await withDeadline(.seconds(2), "receive()", hint: receiveHint) {
          try await channel.receive()
        })
    }

    #expect(received == (capacity == 1 ? [0, 1, 2, 3] : [1, 2, 3]))
    for sender in senders { try await sender.value("a waiting send(_:)", hint: sendHint) }
  }

  @Test(
    "Receivers that wait are served in the order they started waiting", arguments: [0, 2])
  func waitingReceiversInOrder(capacity: Int) async throws {
    // Each receiver starts on an executor that tells when it has nothing left to run: by
    // then that receive() has stored its continuation, so the order of waiting is known.
    let executor = SettlingExecutor()
    for round in 1...3 {
      let channel = Channel<Int>(capacity: capacity)
      var receivers: [Started<Int?>] = []
      for index in 1...5 {
        let receiver = await Started.waiting(on: executor, "receiver \(index)") {
          try await channel.receive()
        }
        try #require(!receiver.isFinished, "receive() returned from an empty channel")
        receivers.append(receiver)
      }

      for element in 1...5 {
        try await withDeadline(.seconds(2), "send(_:) to waiting receivers", hint: sendHint) {
          try await channel.send(element)
        }
      }

      var received: [Int?] = []
      for receiver in receivers {
        received.append(try await receiver.value("a waiting receive()", hint: receiveHint))
      }
      #expect(
        received == [1, 2, 3, 4, 5],
        """
        round \(round): receivers 1 to 5 waited in that order and got \(received): waiting \
        receivers must be served first come, first served (keep them in a first-in, \
        first-out queue, not a stack, a set or a dictionary)
        """)
    }
  }

  // MARK: Closing

  @Test("After close(), receivers get every buffered element, then nil")
  func closeDrainsThenEnds() async throws {
    let channel = Channel<Int>(capacity: 3)
    for element in 1...3 { try await fill(channel, with: element) }

    channel.close()

    #expect(try await drain(channel) == [1, 2, 3], "close() must not drop buffered elements")
    let again = try await withDeadline(.seconds(2), "receive() after the end", hint: closeHint) {
      try await channel.receive()
    }
    #expect(again == nil, "a drained closed channel keeps returning nil")
  }

  @Test("close() ends every waiting receiver with nil", arguments: [0, 4])
  func closeEndsWaitingReceivers(capacity: Int) async throws {
    let channel = Channel<Int>(capacity: capacity)
    let receivers = (0..<3).map { _ in Started { try await channel.receive() } }
    for receiver in receivers {
      try await expectStillWaiting(receiver, "receive() returned from an empty channel")
    }

    channel.close()

    for receiver in receivers {
      #expect(try await receiver.value("a waiting receive() at close()", hint: closeHint) == nil)
    }
  }

  @Test(
    "close() fails waiting senders with ChannelClosedError; their elements are not received",
    arguments: [0, 1])
  func closeFailsWaitingSenders(capacity: Int) async throws {
    let channel = Channel<Int>(capacity: capacity)
    if capacity == 1 { try await fill(channel, with: 1) }
    let sending = Started { try await channel.send(2) }
    try await expectStillWaiting(sending, "send(_:) returned into a full channel")

    channel.close()

    let result = try await sending.result("a waiting send(_:) at close()", hint: closeHint)
    #expect(throws: ChannelClosedError()) { try result.get() }
    #expect(
      try await drain(channel) == (capacity == 1 ? [1] : []),
      "close() must not drop buffered elements, and a send that threw sent nothing")
  }

  @Test("A send after close() throws ChannelClosedError and sends nothing")
  func sendAfterClose() async throws {
    let channel = Channel<Int>(capacity: 2)
    try await fill(channel, with: 1)
    channel.close()
    channel.close()  // a second close changes nothing

    await #expect(
      throws: ChannelClosedError(),
      Comment(
        rawValue: "a send(_:) after close() must throw ChannelClosedError, even with room in "
          + "the buffer: a closed channel takes nothing more")
    ) {
      try await withDeadline(.seconds(2), "send(_:) after close()", hint: closeHint) {
        try await channel.send(2)
      }
    }
    let drained = try await drain(channel)
    #expect(
      drained == [1],
      Comment(
        rawValue: drained.contains(2)
          ? "a send(_:) after close() got its element into the channel (a receiver got \(drained)): "
            + "a closed channel takes nothing more, whether or not the send would have waited"
          : "close() must not drop buffered elements"))
  }

  /// The tests in which a wrong answer can resume a continuation twice, which stops the
  /// test process. They run one at a time, so that a crash names a single test.
  @Suite("Cancellation, and many tasks at once", .serialized)
  struct OneAtATime {
    // MARK: Cancellation

    @Test(
      "A cancelled waiting receiver throws CancellationError at once and takes nothing",
      arguments: [0, 2])
    func cancelWaitingReceiver(capacity: Int) async throws {
      // An earlier test already found a call that never returns; this one would hang too.
      if aCallNeverReturned.value { return }
      let channel = Channel<Int>(capacity: capacity)
      let cancelled = Started { try await channel.receive() }
      try await expectStillWaiting(cancelled, "receive() returned from an empty channel")

      cancelled.cancel()

      let result = try await cancelled.result("a cancelled receive()", hint: cancelHint)
      #expect(throws: CancellationError.self) { try result.get() }

      // The element sent next must reach the next receiver, not the cancelled one.
      let receiving = Started { try await channel.receive() }
      try await withDeadline(
        .seconds(2), "send(_:) after a receiver was cancelled",
        hint: sendHint
          + "; here a receiver that waits came after a cancelled one: did the cancel leave an "
          + "empty place in the line of waiting receivers, which send then took for nobody "
          + "waiting?"
      ) {
        try await channel.send(7)
      }
      #expect(
        try await receiving.value("the receive() after the cancelled one", hint: receiveHint) == 7,
        "the cancelled receiver took the element")
    }

    @Test(
      "A cancelled waiting sender throws CancellationError at once; its element is not sent",
      arguments: [0, 1])
    func cancelWaitingSender(capacity: Int) async throws {
      // An earlier test already found a call that never returns; this one would hang too.
      if aCallNeverReturned.value { return }
      let channel = Channel<Int>(capacity: capacity)
      if capacity == 1 { try await fill(channel, with: 1) }
      let cancelled = Started { try await channel.send(2) }
      try await expectStillWaiting(cancelled, "send(_:) returned into a full channel")

      cancelled.cancel()

      let result = try await cancelled.result("a cancelled send(_:)", hint: cancelHint)
      #expect(throws: CancellationError.self) { try result.get() }
      channel.close()
      let drained = try await drain(channel)
      #expect(!drained.contains(2), "the element of a cancelled send was received")
      #expect(
        capacity == 0 || drained.contains(1), "close() must not drop buffered elements")
    }

    @Test("Cancelling one of several waiting senders keeps the others in their order")
    func cancelMiddleSender() async throws {
      // An earlier test already found a call that never returns; this one would hang too.
      if aCallNeverReturned.value { return }
      let channel = Channel<Int>(capacity: 0)
      var senders: [Started<Void>] = []
      for element in 1...3 {
        senders.append(Started { try await channel.send(element) })
        try await expectStillWaiting(senders.last!, "send(_:) returned with nobody receiving")
      }

      senders[1].cancel()
      let result = try await senders[1].result("a cancelled send(_:)", hint: cancelHint)

      #expect(throws: CancellationError.self) { try result.get() }
      var received: [Int?] = []
      for _ in 0..<2 {
        received.append(
          try await withDeadline(.seconds(2), "receive()", hint: receiveHint) {
            try await channel.receive()
          })
      }
      #expect(received == [1, 3])
      try await senders[0].value("the first send(_:)", hint: sendHint)
      try await senders[2].value("the third send(_:)", hint: sendHint)
    }

    @Test(
      "A waiting receiver cancelled while close() resumes it: close() does not hold the lock",
      arguments: [0, 2])
    func cancelWhileResuming(capacity: Int) async throws {
      for round in 1...3 {
        _ = try await cancelWhileClosing(
          capacity: capacity, round: round, servingOneFirst: round == 1)
      }
    }

    @Test("Cancelling a task that iterates the channel ends its loop by throwing CancellationError")
    func cancelledIterationThrows() async throws {
      // An earlier test already found a call that never returns; this one would hang too.
      if aCallNeverReturned.value { return }
      let channel = Channel<Int>(capacity: 0)
      let iterating = Started { () async throws -> [Int] in
        var received: [Int] = []
        for try await element in channel { received.append(element) }
        return received
      }
      try await expectStillWaiting(iterating, "iterating an empty channel ended at once")

      iterating.cancel()

      let result = try await iterating.result("a cancelled for try await loop", hint: cancelHint)
      #expect(
        throws: CancellationError.self,
        """
        the loop of a cancelled task ended as if the channel had been closed: a consumer \
        that acts once the channel is done (reports the work finished, closes the next \
        stage) cannot tell the two apart. The iterator's next() may throw; a cancelled \
        receive is an error to pass on, not an end
        """
      ) { try result.get() }
    }

    @Test("A task that is already cancelled does not wait in send or receive")
    func alreadyCancelled() async throws {
      // Two channels, so that the two calls cannot meet each other.
      let empty = Channel<Int>(capacity: 0)
      let full = Channel<Int>(capacity: 0)
      let receiving = Started {
        withUnsafeCurrentTask { $0?.cancel() }
        return try await empty.receive()
      }
      let sending = Started {
        withUnsafeCurrentTask { $0?.cancel() }
        try await full.send(1)
      }

      let received = try await receiving.result(
        "receive() in a cancelled task", hint: alreadyCancelledHint)
      let sent = try await sending.result(
        "send(_:) in a cancelled task", hint: alreadyCancelledHint)

      #expect(throws: CancellationError.self) { try received.get() }
      #expect(throws: CancellationError.self) { try sent.get() }
    }

    @Test("A task that is already cancelled throws even where the call would not wait")
    func alreadyCancelledWithRoom() async throws {
      // A channel with room for the element, and one with an element buffered: neither call
      // would wait, and still neither may complete.
      let roomy = Channel<Int>(capacity: 1)
      let stocked = Channel<Int>(capacity: 1)
      try await stocked.send(7)
      let sending = Started {
        withUnsafeCurrentTask { $0?.cancel() }
        try await roomy.send(1)
      }
      let receiving = Started {
        withUnsafeCurrentTask { $0?.cancel() }
        return try await stocked.receive()
      }

      let sent = try await sending.result(
        "send(_:) in a cancelled task", hint: alreadyCancelledHint)
      let received = try await receiving.result(
        "receive() in a cancelled task", hint: alreadyCancelledHint)
      roomy.close()
      stocked.close()
      let leftInRoomy = try await roomy.receive()
      let leftInStocked = try await stocked.receive()

      let sendThrew = (try? sent.get()) == nil
      let receiveThrew = (try? received.get()) == nil
      #expect(
        sendThrew && receiveThrew && leftInRoomy == nil && leftInStocked == 7,
        "in tasks already cancelled, a send(_:) to a channel with room \(sendThrew ? "threw" : "returned") and left \(leftInRoomy.map { "\($0)" } ?? "nothing") in it, and a receive() from a channel holding 7 \(receiveThrew ? "threw" : "returned \(String(describing: try? received.get()))") and left \(leftInStocked.map { "\($0)" } ?? "nothing"): a task that is already cancelled throws CancellationError at once, without sending or receiving, even where the call would not have to wait"
      )
    }

    @Test("A send or receive cancelled right after any look at its cancellation ends at once")
    func cancelledRightAfterALook() async throws {
      let lost =
        "check Task.isCancelled in the same locked step that stores the continuation: "
        + "onCancel takes that lock, so either the check sees the cancel or onCancel finds "
        + "the continuation"
      let receives = try await cancellingAfterEachLook("receive()", lostCancelCause: lost) {
        let empty = Channel<Int>(capacity: 0)
        return { try await empty.receive() }
      }
      let sends = try await cancellingAfterEachLook("send(_:)", lostCancelCause: lost) {
        let full = Channel<Int>(capacity: 0)
        return { try await full.send(1) }
      }
      expectEveryRoundThrewCancellationError(receives, caller: "a receive()")
      expectEveryRoundThrewCancellationError(sends, caller: "a send(_:)")
    }

    @Test(
      "A sender cancelled as a receiver arrives: its element is received once if send returned, never if it threw",
      arguments: [0, 1])
    func cancelSenderRacingHandOff(capacity: Int) async throws {
      // If it stops early (a deadline passed), the tests after it would only hang too.
      var completed = false
      defer { if !completed { aCallNeverReturned.withLock { $0 = true } } }
      // An earlier test already found a call that never returns; this one would hang too.
      if aCallNeverReturned.value { return }
      guard try await resumesOutsideTheLock() else { return }
      for round in 1...150 {
        let channel = Channel<Int>(capacity: capacity)
        if capacity == 1 { try await fill(channel, with: 0) }
        let sending = Started { try await channel.send(round) }
        if round % 2 == 0 { await Task.yield() }
        let receiving = Started { try await channel.receive() }
        sending.cancel()

        let sent = try await sending.result(
          "a send(_:) cancelled during a hand-off", hint: cancelHint)
        // If the send was cancelled first, the receiver still waits: closing ends it.
        channel.close()
        let first = try await receiving.value("receive()", hint: closeHint)
        let everything = [first].compactMap { $0 } + (try await drain(channel))

        let copies = everything.filter { $0 == round }.count
        switch sent {
        case .success:
          #expect(copies == 1, "round \(round): send returned, so its element must arrive once")
        case .failure(let error):
          #expect(error is CancellationError, "round \(round): send threw \(error)")
          #expect(copies == 0, "round \(round): send threw, yet its element was received")
        }
        if capacity == 1 { #expect(everything.first == 0, "round \(round): lost the buffered 0") }
      }
      completed = true
    }

    @Test(
      "A receiver cancelled as a sender arrives: it takes the element or nothing, and nothing is lost"
    )
    func cancelReceiverRacingHandOff() async throws {
      // If it stops early (a deadline passed), the tests after it would only hang too.
      var completed = false
      defer { if !completed { aCallNeverReturned.withLock { $0 = true } } }
      // An earlier test already found a call that never returns; this one would hang too.
      if aCallNeverReturned.value { return }
      guard try await resumesOutsideTheLock() else { return }
      for round in 1...150 {
        let channel = Channel<Int>(capacity: 0)
        let receiving = Started { try await channel.receive() }
        if round % 2 == 0 { await Task.yield() }
        let sending = Started { try await channel.send(round) }
        receiving.cancel()

        let taken = try await receiving.result(
          "a receive() cancelled during a hand-off", hint: cancelHint)
        switch taken {
        case .success(let element):
          #expect(
            element == round, "round \(round): the receiver got \(String(describing: element))")
          try await sending.value("send(_:) whose element was taken", hint: sendHint)
        case .failure(let error):
          #expect(error is CancellationError, "round \(round): receive threw \(error)")
          // The element is still the sender's: the next receiver must get it.
          let next = try await withDeadline(.seconds(2), "the next receive()", hint: receiveHint) {
            try await channel.receive()
          }
          #expect(next == round, "round \(round): the cancelled receiver lost the element")
          try await sending.value("send(_:) to the next receiver", hint: sendHint)
        }
      }
      completed = true
    }

    // MARK: Many at once

    @Test(
      "Many producers and consumers: every element exactly once, in each producer's order",
      arguments: [0, 1, 16])
    func manyProducersAndConsumers(capacity: Int) async throws {
      // If it stops early (a deadline passed), the tests after it would only hang too.
      var completed = false
      defer { if !completed { aCallNeverReturned.withLock { $0 = true } } }
      // An earlier test already found a call that never returns; this one would hang too.
      if aCallNeverReturned.value { return }
      let producers = 8
      let consumers = 6
      let perProducer = 250
      let sent = (0..<producers).flatMap { producer in
        (0..<perProducer).map { producer * 10_000 + $0 }
      }

      for round in 1...5 {
        let channel = Channel<Int>(capacity: capacity)
        let received = try await withDeadline(
          .seconds(5), "round \(round) of \(producers) producers and \(consumers) consumers",
          hint: "some send or receive was never resumed; look for a path that suspends without "
            + "storing its continuation, or takes one out without resuming it"
        ) {
          let producing = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
              for producer in 0..<producers {
                group.addTask {
                  for index in 0..<perProducer { try await channel.send(producer * 10_000 + index) }
                }
              }
              try await group.waitForAll()
            }
            channel.close()
          }
          let received = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<consumers {
              group.addTask {
                var received: [Int] = []
                for try await element in channel { received.append(element) }
                return received
              }
            }
            return try await group.reduce(into: []) { $0.append($1) }
          }
          try await producing.value
          return received
        }

        for (consumer, elements) in received.enumerated() {
          for producer in 0..<producers {
            #expect(
              isIncreasing(elements.filter { $0 / 10_000 == producer }),
              "round \(round): consumer \(consumer) got producer \(producer)'s elements out of order"
            )
          }
        }
        let everything = received.flatMap { $0 }
        #expect(
          everything.count == sent.count,
          "round \(round): sent \(sent.count), received \(everything.count)")
        #expect(
          everything.sorted() == sent,
          "round \(round): the elements received differ from those sent")
      }
      completed = true
    }

    @Test(
      "Cancelling senders and receivers at random loses and duplicates nothing",
      arguments: [0, 4])
    func randomCancellation(capacity: Int) async throws {
      // If it stops early (a deadline passed), the tests after it would only hang too.
      var completed = false
      defer { if !completed { aCallNeverReturned.withLock { $0 = true } } }
      // An earlier test already found a call that never returns; this one would hang too.
      if aCallNeverReturned.value { return }
      guard try await resumesOutsideTheLock() else { return }
      let producers = 6
      let consumers = 6
      let perProducer = 200

      for round in 1...5 {
        let channel = Channel<Int>(capacity: capacity)
        let delivered = Locked<[Int]>([])
        let consumed = (0..<consumers).map { _ in Locked<[Int]>([]) }

        try await withDeadline(
          .seconds(5), "round \(round) with cancellations",
          hint: "a cancelled send or receive was never resumed, or a waiter was left in a queue"
        ) {
          let sending = (0..<producers).map { producer in
            Task {
              for index in 0..<perProducer {
                do {
                  try await channel.send(producer * 10_000 + index)
                  delivered.withLock { $0.append(producer * 10_000 + index) }
                } catch {
                  return
                }
              }
            }
          }
          let receiving = (0..<consumers).map { consumer in
            Task {
              for try await element in channel {
                consumed[consumer].withLock { $0.append(element) }
              }
            }
          }
          // Every other producer and consumer is cancelled at some point while they work;
          // consumer 0 and 1 never are, so somebody drains the channel.
          for index in stride(from: 1, to: producers, by: 2) {
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...3)))
            sending[index].cancel()
            if index + 1 < consumers { receiving[index + 1].cancel() }
          }
          for task in sending { await task.value }
          channel.close()
          for task in receiving { _ = await task.result }
        }

        let received = consumed.flatMap(\.value)
        let sent = delivered.value
        #expect(
          received.count == sent.count,
          "round \(round): \(sentAndReceived(sent, received))")
        #expect(
          received.sorted() == sent.sorted(),
          "round \(round): received elements differ from those whose send returned")
        for (consumer, elements) in consumed.enumerated() {
          for producer in 0..<producers {
            #expect(
              isIncreasing(elements.value.filter { $0 / 10_000 == producer }),
              "round \(round): consumer \(consumer) got producer \(producer)'s elements out of order"
            )
          }
        }
      }
      completed = true
    }
  }

  /// Sends `count` parcels through `channel`, each from a task of its own, and receives
  /// them all; returns them watched, with nothing of the test's holding them.
  private func passParcels(
    through channel: Channel<Parcel>, count: Int
  ) async throws -> [WatchedParcel] {
    let parcels = (0..<count).map(Parcel.init)
    let watched = parcels.map { WatchedParcel(parcel: $0) }
    let senders = parcels.map { parcel in Task { try await channel.send(parcel) } }
    try await withDeadline(.seconds(2), "receive() of parcels sent by \(count) tasks") {
      for _ in 0..<count { _ = try await channel.receive() }
      for sender in senders { try await sender.value }
    }
    return watched
  }

  @Test("An element handed out is not kept by the channel", arguments: [0, 4])
  func receivedElementsAreReleased(capacity: Int) async throws {
    let channel = Channel<Parcel>(capacity: capacity)
    let watched = try await passParcels(through: channel, count: 3)

    let released = await allReleased(watched)
    #expect(
      released,
      """
      the channel still holds elements it has handed out (capacity \(capacity)): a queue \
      that moves an index past a slot must also empty that slot, or every element sent \
      lives as long as the channel does
      """)
    withExtendedLifetime(channel) {}
  }
}

extension BuildAChannelTests.OneAtATime {
  @Test(
    "A hand-off resumes the waiting side outside the lock, whichever side waits",
    arguments: [HandOff.receiverWaits, .senderWaits])
  func handOffResumesOutsideTheLock(_ handOff: HandOff) async throws {
    // An earlier test already found a call that never returns; this one would hang too.
    if aCallNeverReturned.value { return }
    for round in 1...3 {
      guard try await cancelWhileHandingOff(handOff, round: round) else { return }
    }
  }
}

/// Which side of a hand-off waits, and is resumed by the other.
enum HandOff: CustomTestStringConvertible, Sendable {
  case receiverWaits, senderWaits

  var testDescription: String {
    self == .receiverWaits
      ? "a waiting receiver resumed by send" : "a waiting sender resumed by receive"
  }
}

/// Lets one side of a hand-off wait on a thread of its own, under the probe, and has the
/// other side, on another thread, resume it: the probe cancels the waiting side from a
/// third thread while the resumer is inside resume. Returns false if that cancellation had
/// to wait for the channel's lock (the probe then records why): with the runtime, the same
/// order deadlocks for good, now and then, in an app.
func cancelWhileHandingOff(
  _ handOff: HandOff, round: Int, sourceLocation: SourceLocation = #_sourceLocation
) async throws -> Bool {
  let (waiting, coming) =
    handOff == .receiverWaits ? ("receive()", "send(_:)") : ("send(_:)", "receive()")
  let channel = Channel<Int>(capacity: 0)
  let started = Locked(false)
  let other = Task(executorPreference: OneThreadExecutor()) { () async throws -> Int? in
    while !started.value { try await Task.sleep(for: .milliseconds(1)) }
    // Let the waiting side store its continuation (it runs on its own, idle thread).
    try await Task.sleep(for: .milliseconds(50))
    if handOff == .receiverWaits {
      try await channel.send(round)
      return nil
    }
    return try await channel.receive()
  }
  let clock = ContinuousClock()
  let start = clock.now
  // Resumed and cancelled at once, the waiting side may finish or throw CancellationError;
  // either is right here.
  _ = try? await withCancellationRacingResume(
    .seconds(2), "round \(round): \(waiting) resumed by \(coming) from another thread",
    hint: handOff == .receiverWaits ? receiveHint : sendHint, sourceLocation: sourceLocation
  ) { () async throws -> Int? in
    started.withLock { $0 = true }
    if handOff == .receiverWaits { return try await channel.receive() }
    try await channel.send(round)
    return nil
  }
  let elapsed = clock.now - start
  channel.close()
  try await withDeadline(
    .seconds(2), "round \(round): \(coming) beside a cancelled \(waiting)",
    hint: handOff == .receiverWaits ? sendHint : receiveHint, checksPool: false,
    sourceLocation: sourceLocation
  ) {
    _ = try? await other.value
  }
  // The probe waits a second for a cancellation stuck behind the lock.
  return elapsed < .milliseconds(900)
}
