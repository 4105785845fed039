import Foundation
import Testing
import WorkbookTesting

@testable import Channels

private let handOffHint =
  "a receiver was already waiting, so the buffer was empty: send(_:) must hand the element "
  + "to that receiver (resume it), not keep it in the buffer"
private let closeHint = "after close(), receive() returns what is kept, then nil"

/// Receives until `channel` ends, each receive within the deadline.
private func drain(_ channel: NonBlockingChannel<Int>) async throws -> [Int] {
  var received: [Int] = []
  while let element = try await withDeadline(
    .seconds(2), "receive() on a closed channel", hint: closeHint,
    { try await channel.receive() })
  {
    received.append(element)
  }
  return received
}

/// Sends `element`, expecting it to be accepted.
private func send(
  _ element: Int, to channel: NonBlockingChannel<Int>,
  sourceLocation: SourceLocation = #_sourceLocation
) throws {
  try #require(
    channel.send(element), "send(\(element)) was refused by an open channel",
    sourceLocation: sourceLocation)
}

/// Lets a receiver wait on a thread of its own, sends from another thread, and has the
/// probe cancel the receiver from a third one while send(_:) is inside resume. Returns false
/// if that cancellation had to wait for the channel's lock (the probe then records why).
func cancelWhileSending(
  kind: BufferKind, round: Int, sourceLocation: SourceLocation = #_sourceLocation
) async throws -> Bool {
  let channel = NonBlockingChannel<Int>(kind)
  let receiving = Locked(false)
  let sent = Locked<Bool?>(nil)
  Thread.detachNewThread {
    while !receiving.value { usleep(1_000) }
    // Let the receive() store its continuation (it runs on its own, idle thread).
    usleep(50_000)
    let accepted = channel.send(round)
    sent.withLock { $0 = accepted }
    // Refused (the send rule is not written yet): end the receive rather than hang.
    if !accepted { channel.close() }
  }
  let clock = ContinuousClock()
  let start = clock.now
  let received = try await withCancellationRacingResume(
    .seconds(2), "receive() resumed by send(_:) from another thread", hint: handOffHint,
    sourceLocation: sourceLocation
  ) {
    receiving.withLock { $0 = true }
    return try await channel.receive()
  }
  let elapsed = clock.now - start
  await eventually("round \(round): send(_:) to return", sourceLocation: sourceLocation) {
    sent.value != nil
  }
  try #require(
    sent.value == true, "send(\(round)) was refused by an open channel",
    sourceLocation: sourceLocation)
  #expect(
    received == round, "round \(round): the receiver lost the element",
    sourceLocation: sourceLocation)
  // The probe waits a second for a cancellation stuck behind the lock.
  return elapsed < .milliseconds(900)
}

/// The contract of `NonBlockingChannel`: each path, what senders and receivers see, and the
/// test that checks it (— where a column does not apply, and why). Tests whose name is in the
/// stress file are in `04-BufferKindsStressTests.swift`.
///
/// | path | send | receive (elements, order) | waiting receivers | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | unlimited, a burst | never waits: `unlimitedKeepsEverything` | every element, in order: `unlimitedKeepsEverything`, `unlimitedSlowReceiver` | — | — |
/// | conflated, a receiver behind | never waits: `conflatedBurst` | only the newest: `conflatedKeepsTheNewest`, `conflatedBurst`; increasing, recent, the last one: `conflatedProgress` | — | — |
/// | a waiting receiver | — | the very next element, none skipped: `conflatedWaitingReceiver` | first come, first served: `waitingReceiversInOrder` | — |
/// | `close()` | refused after it: `sendAfterClose`; before it, accepted even from a cancelled task: `sendFromACancelledTask` | conflated: the newest, then `nil`: `conflatedCloseKeepsTheLast` | `nil`: `closeEndsWaitingReceivers` | — |
/// | a waiting receiver is cancelled | — | `CancellationError`, takes nothing: `cancelledReceiver` | — | while a send resumes it, no deadlock: `cancelWhileResuming` |
/// | a receiver cancelled right after a look at its cancellation | — | `CancellationError`, at once: `receiveCancelledRightAfterALook` | — | — |
/// | many senders and receivers | — | nothing twice, nothing invented; unlimited loses nothing: `manySendersAndReceivers` | — | sends from random threads while receivers are cancelled: `sendsFromPlainThreads` |
/// | an element handed out (buffered, or to a waiting receiver) | — | — | not kept by the channel: `receivedElementsAreReleased` | — |
/// | a full buffer | — neither kind is ever full: send never waits | | | |
/// | a receiver arrives between a send's look for a waiting receiver and its store in the buffer | — | — a send that looks and stores in two locked steps leaves that receiver waiting beside a kept element; the gap lies inside the answer's own code, between two lock steps that call nothing the test can pause, and stress lands there only by chance (not caught) | | |
@Suite("6.4 Buffer kinds")
struct BufferKindsTests {
  // MARK: Unlimited

  @Test("Unlimited: a burst of sends never waits, and every element arrives in order")
  func unlimitedKeepsEverything() async throws {
    let channel = NonBlockingChannel<Int>(.unlimited)
    for element in 0..<10_000 { try send(element, to: channel) }
    channel.close()

    let received = try await drain(channel)

    #expect(
      received.count == 10_000, "an unlimited channel loses nothing: it keeps every element")
    #expect(received == Array(0..<10_000))
  }

  @Test("Unlimited: a slow receiver still gets every element, in order")
  func unlimitedSlowReceiver() async throws {
    let channel = NonBlockingChannel<Int>(.unlimited)
    let receiving = Started {
      var received: [Int] = []
      for try await element in channel {
        received.append(element)
        try await Task.sleep(for: .milliseconds(1))
      }
      return received
    }
    for element in 1...50 { try send(element, to: channel) }
    channel.close()

    #expect(
      try await receiving.value("iterating the channel", hint: closeHint) == Array(1...50),
      "an unlimited channel loses nothing, and keeps the order")
  }

  // MARK: Conflated

  @Test("Conflated: a receiver that falls behind gets only the newest element")
  func conflatedKeepsTheNewest() async throws {
    let channel = NonBlockingChannel<Int>(.conflated)
    for element in 1...3 { try send(element, to: channel) }

    let received = try await withDeadline(.seconds(2), "receive()", hint: "an element was kept") {
      try await channel.receive()
    }
    #expect(
      received == 3,
      Comment(
        rawValue: received == 1
          ? "a conflated channel keeps the newest element, not the oldest"
          : "after sends of 1, 2 and 3, receive() got \(String(describing: received)): the "
            + "channel held more than one element, and handed out one that a newer send had "
            + "replaced; a conflated channel holds one element at most, the newest"))

    // Nothing older is left behind the newest.
    let next = Started { try await channel.receive() }
    try await expectStillWaiting(
      next,
      Comment(
        rawValue: "receive() found an out-of-date element after the newest one: a conflated "
          + "channel holds one element at most, the newest, and each send replaces the one "
          + "it holds"))
    try send(4, to: channel)
    #expect(try await next.value("receive()", hint: handOffHint) == 4)
  }

  @Test("Conflated: a burst of sends never waits and keeps one element")
  func conflatedBurst() async throws {
    let channel = NonBlockingChannel<Int>(.conflated)
    for element in 0..<10_000 { try send(element, to: channel) }
    channel.close()

    #expect(try await drain(channel) == [9_999])
  }

  @Test("Conflated: a waiting receiver gets the very next element, nothing is skipped")
  func conflatedWaitingReceiver() async throws {
    let channel = NonBlockingChannel<Int>(.conflated)
    // Started where the test can tell that each receive() is waiting, in this order.
    let executor = SettlingExecutor()
    let first = await Started.waiting(on: executor, "the first receive()") {
      try await channel.receive()
    }
    let second = await Started.waiting(on: executor, "the second receive()") {
      try await channel.receive()
    }
    try #require(
      !first.isFinished && !second.isFinished, "receive() returned from an empty channel")

    try send(1, to: channel)
    try send(2, to: channel)

    #expect(
      try await first.value("the first waiting receive()", hint: handOffHint) == 1,
      "the receiver that waited first must get the first element (first come, first served)")
    #expect(
      try await second.value("the second waiting receive()", hint: handOffHint) == 2,
      """
      a waiting receiver must get the very next element; a conflated channel skips only \
      elements that nobody waits for
      """)
  }

  @Test(
    "Receivers that wait are served in the order they started waiting",
    arguments: [BufferKind.unlimited, .conflated])
  func waitingReceiversInOrder(kind: BufferKind) async throws {
    let channel = NonBlockingChannel<Int>(kind)
    let executor = SettlingExecutor()
    var receivers: [Started<Int?>] = []
    for index in 1...5 {
      let receiver = await Started.waiting(on: executor, "receiver \(index)") {
        try await channel.receive()
      }
      try #require(!receiver.isFinished, "receive() returned from an empty channel")
      receivers.append(receiver)
    }

    for element in 1...5 { try send(element, to: channel) }

    var received: [Int?] = []
    for receiver in receivers {
      received.append(try await receiver.value("a waiting receive()", hint: handOffHint))
    }
    #expect(
      received == [1, 2, 3, 4, 5],
      """
      receivers 1 to 5 waited in that order and got \(received): hand each element to the \
      receiver that has waited longest (receivers.popFirst())
      """)
  }

  @Test("Conflated: the newest element is still received after close(), then nil")
  func conflatedCloseKeepsTheLast() async throws {
    let channel = NonBlockingChannel<Int>(.conflated)
    try send(1, to: channel)
    try send(2, to: channel)

    channel.close()

    #expect(try await drain(channel) == [2])
  }

  @Test("Conflated: a fast sender and a slow receiver; the receiver sees increasing, recent values")
  func conflatedProgress() async throws {
    let channel = NonBlockingChannel<Int>(.conflated)
    let receiving = Started {
      var seen: [Int] = []
      for try await element in channel {
        seen.append(element)
        try await Task.sleep(for: .milliseconds(10))
      }
      return seen
    }
    for percent in 1...100 {
      try send(percent, to: channel)
      if percent % 10 == 0 { try await Task.sleep(for: .milliseconds(3)) }
    }
    channel.close()

    let seen = try await receiving.value("iterating the channel", hint: closeHint)
    #expect(isIncreasing(seen), "\(seen)")
    #expect(seen.last == 100, "the last value sent must be received: \(seen)")
    #expect(seen.count < 100, "a slow receiver of a conflated channel skips values: \(seen)")
  }

  // MARK: Both

  @Test("After close(), sends are refused", arguments: [BufferKind.unlimited, .conflated])
  func sendAfterClose(kind: BufferKind) async throws {
    let channel = NonBlockingChannel<Int>(kind)
    try send(1, to: channel)
    channel.close()

    #expect(!channel.send(2), "send(_:) accepted an element after close()")
    let received = try await drain(channel)
    #expect(
      received == [1],
      "after send(1), close() and a refused send(2), the receivers got \(received), not [1]: what was kept before close() is received after it, and a refused send changes nothing"
    )
  }

  @Test(
    "A send from a cancelled task is accepted while the channel is open",
    arguments: [BufferKind.unlimited, .conflated])
  func sendFromACancelledTask(kind: BufferKind) async throws {
    let channel = NonBlockingChannel<Int>(kind)
    // Cleanup code in a cancelled task still reports its last progress or log line: only
    // close() may refuse an element, and send(_:) never waits, so it has nothing to cancel.
    let accepted = await Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return channel.send(7)
    }.value
    channel.close()

    #expect(
      accepted,
      "send(_:) refused an element from a cancelled task on an open channel: only close() may refuse one"
    )
    #expect(try await drain(channel) == (accepted ? [7] : []))
  }

  @Test(
    "close() ends every waiting receiver with nil", arguments: [BufferKind.unlimited, .conflated])
  func closeEndsWaitingReceivers(kind: BufferKind) async throws {
    let channel = NonBlockingChannel<Int>(kind)
    let receivers = (0..<3).map { _ in Started { try await channel.receive() } }
    for receiver in receivers {
      try await expectStillWaiting(receiver, "receive() returned from an empty channel")
    }
    // An open channel that refuses the first send would fail here, before closing.
    try send(1, to: channel)

    channel.close()

    var results: [Int?] = []
    for receiver in receivers {
      results.append(try await receiver.value("a waiting receive() at close()", hint: closeHint))
    }
    #expect(results.sorted { ($0 ?? 0) < ($1 ?? 0) } == [nil, nil, 1])
  }

  @Test(
    "A cancelled waiting receiver throws CancellationError and takes nothing",
    arguments: [BufferKind.unlimited, .conflated])
  func cancelledReceiver(kind: BufferKind) async throws {
    let channel = NonBlockingChannel<Int>(kind)
    let cancelled = Started { try await channel.receive() }
    try await expectStillWaiting(cancelled, "receive() returned from an empty channel")

    cancelled.cancel()
    let result = try await cancelled.result(
      "a cancelled receive()", hint: "the provided receive() handles cancellation")
    try send(5, to: channel)
    channel.close()

    #expect(throws: CancellationError.self) { try result.get() }
    #expect(try await drain(channel) == [5], "the cancelled receiver took the element")
  }

  @Test(
    "A receive() cancelled right after any look at its cancellation ends at once",
    arguments: [BufferKind.unlimited, .conflated])
  func receiveCancelledRightAfterALook(kind: BufferKind) async throws {
    // The cancel lands in the gap between a look and the store of the continuation, every
    // run: a look made outside the step that stores the receiver loses it.
    let lost =
      "the receive() given with the exercise looks at its cancellation in the same locked "
      + "step that stores the receiver; a look made before that step leaves a gap in which "
      + "onCancel finds no receiver to end, and the receiver stored after it waits for ever"
    let rounds = try await cancellingAfterEachLook("receive()", lostCancelCause: lost) {
      let empty = NonBlockingChannel<Int>(kind)
      return { try await empty.receive() }
    }
    expectEveryRoundThrewCancellationError(rounds, caller: "a receive()")
  }

  @Test(
    "A waiting receiver cancelled while send(_:) resumes it: send does not hold the lock",
    arguments: [BufferKind.unlimited, .conflated])
  func cancelWhileResuming(kind: BufferKind) async throws {
    for round in 1...3 {
      _ = try await cancelWhileSending(kind: kind, round: round)
    }
  }

  @Test(
    "Many senders and receivers at once: nothing is received twice",
    arguments: [BufferKind.unlimited, .conflated])
  func manySendersAndReceivers(kind: BufferKind) async throws {
    let senders = 4
    let perSender = 500
    let channel = NonBlockingChannel<Int>(kind)

    let received = try await withDeadline(
      .seconds(5), "4 senders and 4 receivers",
      hint: "a receiver was never resumed; send(_:) must hand an element to a waiting receiver"
    ) {
      try await withThrowingTaskGroup(of: [Int].self) { group in
        for _ in 0..<4 {
          group.addTask {
            var received: [Int] = []
            for try await element in channel { received.append(element) }
            return received
          }
        }
        try await withThrowingTaskGroup(of: Void.self) { sending in
          for sender in 0..<senders {
            sending.addTask {
              for index in 0..<perSender {
                try send(sender * 10_000 + index, to: channel)
                if index % 50 == 0 { await Task.yield() }
              }
            }
          }
          try await sending.waitForAll()
        }
        channel.close()
        return try await group.reduce(into: []) { $0 += $1 }
      }
    }

    let sent = (0..<senders).flatMap { sender in (0..<perSender).map { sender * 10_000 + $0 } }
    #expect(Set(received).count == received.count, "an element was received twice")
    #expect(Set(received).isSubset(of: sent), "an element nobody sent was received")
    switch kind {
    case .unlimited:
      #expect(received.sorted() == sent.sorted(), "an unlimited channel loses nothing")
    case .conflated:
      #expect(!received.isEmpty)
    }
  }

  @Test(
    "An element handed out is not kept by the channel, buffered or given to a waiting receiver",
    arguments: [BufferKind.unlimited, .conflated])
  func receivedElementsAreReleased(kind: BufferKind) async throws {
    let channel = NonBlockingChannel<Parcel>(kind)
    let watched = try await withDeadline(
      .seconds(2), "receive() of parcels sent before and after it waits"
    ) { () async throws -> [WatchedParcel]? in
      let (buffered, handedOver) = (Parcel(1), Parcel(2))
      // Buffered first, then handed to a receiver that already waits. (A send refused on an
      // open channel is other tests' business; here it only ends the test.)
      guard channel.send(buffered) else { return nil }
      _ = try await channel.receive()
      let waiting = Task { _ = try await channel.receive() }
      // The receiver may not wait yet: then this parcel is buffered, and it takes that.
      try await Task.sleep(for: .milliseconds(20))
      guard channel.send(handedOver) else {
        waiting.cancel()
        return nil
      }
      try await waiting.value
      return [WatchedParcel(parcel: buffered), WatchedParcel(parcel: handedOver)]
    }
    guard let watched else {
      Issue.record("send(_:) refused an element on an open \(kind) channel")
      return
    }

    let released = await allReleased(watched)
    #expect(
      released,
      """
      the \(kind) channel still holds elements it has handed out: a queue that moves an \
      index past a slot must also empty that slot, or every element sent lives as long as \
      the channel does
      """)
    withExtendedLifetime(channel) {}
  }
}
