import CoroutineKit
import Dispatch
import Testing
import WorkbookTesting

@testable import Channels

private let finishHint =
  "the stream never finished: when awaitReceive() throws CoChannelError.closed, call "
  + "continuation.finish()"
private let releaseHint =
  "the consumer stopped early but the channel was left as it was, so the producer blocks in "
  + "awaitSend(_:) forever; in onTermination, cancel the channel when the termination is "
  + ".cancelled"

/// A legacy producer: a coroutine that sends `elements`, pausing now and then, and closes
/// the channel when it is done.
private func produce(
  _ elements: ClosedRange<Int>, into channel: CoChannel<Int>
) -> CoFuture<Void> {
  DispatchQueue.global().coroutineFuture {
    for element in elements {
      try channel.awaitSend(element)
      if element % 4 == 0 { Coroutine.delay(.milliseconds(10)) }
    }
    channel.close()
  }
}

/// A legacy producer that never stops on its own: it sends 1, 2, 3… every few
/// milliseconds until a send fails, and then ends with that error.
private func produceForever(into channel: CoChannel<Int>) -> CoFuture<Void> {
  DispatchQueue.global().coroutineFuture {
    var element = 0
    while true {
      element += 1
      try channel.awaitSend(element)
      Coroutine.delay(.milliseconds(5))
    }
  }
}

/// Iterates `channel.elements()` to the end, within the deadline.
private func collect(_ channel: CoChannel<Int>, hint: String = finishHint) async throws -> [Int] {
  try await withDeadline(.seconds(2), "for try await over channel.elements()", hint: hint) {
    var received: [Int] = []
    do {
      for try await element in channel.elements() { received.append(element) }
    } catch CoChannelError.closed {
      Issue.record(
        "the loop over channel.elements() threw CoChannelError.closed after \(received.count) element(s): a producer that closes its channel has ended normally, so the stream finishes without an error; only a cancelled channel ends it with one"
      )
    }
    return received
  }
}

/// A coroutine scheduler that runs a coroutine's first turn on a global queue, and every
/// later turn at once, on the thread that resumes it: a producer resumed by the receiver
/// that took its element runs on, to its next suspension or its end, before that receiver
/// has its element in hand. A real queue may do the same whenever the receiver's thread
/// is preempted.
private final class ResumesInline: CoroutineScheduler, Sendable {
  private let turns = Locked(0)

  /// True once the coroutine's first turn has ended: it is suspended, or done.
  var firstTurnEnded: Bool { turns.value > 0 }

  func scheduleTask(_ task: @escaping () -> Void) {
    guard turns.value > 0 else {
      let turn = UncheckedTurn(run: task)
      DispatchQueue.global().async {
        turn.run()
        self.turns.withLock { $0 += 1 }
      }
      return
    }
    task()
    turns.withLock { $0 += 1 }
  }
}

/// A coroutine's turn, sent to a queue as the legacy code sends it.
private struct UncheckedTurn: @unchecked Sendable {
  let run: () -> Void
}

/// What went wrong when the loop got `received` instead of `expected`: elements skipped but
/// the rest in order means the stream threw some away.
private func lossComment(_ received: [Int], of expected: [Int]) -> Comment {
  var rest = expected[...]
  let inOrder = received.allSatisfy { element in
    guard let index = rest.firstIndex(of: element) else { return false }
    rest = rest[(index + 1)...]
    return true
  }
  if received.isEmpty, !expected.isEmpty {
    return Comment(
      rawValue: "the loop got none of the \(expected.count) elements: the stream ended before "
        + "passing on any of what the channel held. A channel that is closed can still hold "
        + "elements, and its end comes after them: a stream finished at once because the "
        + "channel says it is closed (or an end passed on through a task of its own, Task { "
        + "finish() }, that overtakes them) loses them all")
  }
  if !received.isEmpty, received.count < expected.count,
    Array(expected.prefix(received.count)) == received
  {
    return Comment(
      rawValue: "the loop got the first \(received.count) of \(expected.count) elements, and "
        + "then the stream ended: the end came before elements the channel still held or "
        + "had handed over. An end, or elements, passed on through a task of its own (Task { "
        + "finish() }) run in any order, so the end can overtake them; a loop that stops "
        + "once the channel says it is closed leaves what is still buffered in it; and an "
        + "end passed on from the channel's own close callback (whenComplete) can run before "
        + "the callback that hands over the last element")
  }
  if inOrder, received.count < expected.count {
    let missing = expected.filter { !received.contains($0) }
    return Comment(
      rawValue: "the loop got \(received.count) of \(expected.count) elements, in order but with "
        + "\(missing.prefix(5).map(String.init).joined(separator: ", "))"
        + "\(missing.count > 5 ? "…" : "") missing: the stream threw away elements the channel "
        + "had handed over. A buffering policy that keeps only some (bufferingNewest, "
        + "bufferingOldest) drops them while the loop is busy; keep every one, as the "
        + "default, .unbounded, does (the channel's own buffer holds the producer back)")
  }
  if Set(received).count == received.count, received.allSatisfy(expected.contains),
    let overtaking = zip(received, received.dropFirst()).first(where: { $0.0 > $0.1 })
  {
    return Comment(
      rawValue: "the loop got \(overtaking.0) before \(overtaking.1): the elements came out of "
        + "the order the producer sent them (\(received)). Something between the channel and "
        + "the stream runs in an order of its own: an element passed on through a task of "
        + "its own (Task { yield }) may run after the next one's, and Swift does not run "
        + "tasks in the order they were made; pass each element on where it is received")
  }
  return Comment(
    rawValue: "the loop should get every element the producer sent, once each, in the order "
      + "sent: \(expected)")
}

/// The contract of `CoChannel.elements()`: each path, what the loop, the producer and the
/// channel see, and the test that checks it (— where a column does not apply, and why).
///
/// | path | elements (count, order) | end, error | producer, channel | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | the producer sends, then closes | every one, in order, whatever the buffer: `yieldsEverythingThenEnds`; in order even when tasks started on callback threads run backwards (`withPlainThreadJobsReordered`): `inOrderWhateverTheTaskOrder`; some missing but the rest in order is named as a stream that throws elements away (`lossComment`, in the tests that compare whole sequences) | ends: `yieldsEverythingThenEnds` | the producer ends: `yieldsEverythingThenEnds`; the channel left closed, not cancelled: `aChannelThatEndsByItselfIsLeftAsItIs` | — |
/// | elements buffered before `close()` | all of them: `closeEndsAfterTheBuffer` | then ends: `closeEndsAfterTheBuffer` | — | — |
/// | a backlog ready before the loop (unlimited channel, closed) | all of them, even when the loop starts reading only once the bridge has taken 1,000 out of the channel (a stream that keeps only some is named): `aLoopThatFallsBehindGetsEverything` | then ends: `aLoopThatFallsBehindGetsEverything` | — | received element after element, not each `whenReceive` callback inside the one before (at most 8 deep for 300 elements; `CoChannel.deepestCallbackNesting`): `aBacklogIsNotNested` |
/// | already closed and empty | none: `emptyClosedChannel` | ends at once: `emptyClosedChannel` | — | — |
/// | the channel is cancelled, before or during the loop | the ones before: `cancelThrows`, `cancelRightAfterAnElementThrows` | throws `CoChannelError.cancelled`: `cancelThrows`, `cancelledBeforeIteration`; also when the cancel comes right after an element was handed over, before the bridge has it in hand (producer on `ResumesInline`), where the channel's state looks like a close: `cancelRightAfterAnElementThrows` | — | — |
/// | the loop breaks | — | — | the producer blocked in `awaitSend` is released: `breakReleasesTheProducer` | — |
/// | the loop body throws | — | its error | the producer is released: `throwReleasesTheProducer` | — |
/// | the consuming task is cancelled | — | the loop ends promptly: `taskCancellationReleasesTheProducer` | the producer is released: `taskCancellationReleasesTheProducer`; cancelled before the loop starts, the channel is cancelled all the same (closed instead is named as such): `taskCancelledBeforeTheLoop` | cancelled while the loop waits, the channel is cancelled before `cancel()` returns (tasks started from that thread held a second): `taskCancellationCancelsTheChannelAtOnce` |
/// | the loop stops early after the producer closed the channel, elements still buffered | — | — | — the channel may stay closed, not cancelled: nobody is blocked (the producer is done, the pump drains and ends), and a correct bridge whose pump reached the end first leaves it so too | — |
/// | nothing sent for a while | — | — | — | nothing wakes up to look meanwhile: `idleWhileWaiting` |
/// | two sequences on one channel | — each element goes to one receiver, as with two legacy receivers: nothing to add | | | |
@Suite("6.1 Bridge a channel")
struct BridgeAChannelTests {
  static let kinds: [CoChannel<Int>.BufferType] = [.rendezvous, .buffered(capacity: 3), .unlimited]

  @Test(
    "Yields every element in order, and ends when the producer closes the channel",
    arguments: kinds)
  func yieldsEverythingThenEnds(kind: CoChannel<Int>.BufferType) async throws {
    let channel = CoChannel<Int>(bufferType: kind)
    let producer = produce(1...30, into: channel)

    let received = try await collect(channel)

    #expect(received == Array(1...30), lossComment(received, of: Array(1...30)))
    let produced = try await outcome(
      of: producer, "the producer",
      hint: "the producer was still blocked in awaitSend(_:) after the stream ended: receive "
        + "every element until the channel is closed")
    #expect(throws: Never.self) { try produced.get() }
  }

  @Test(
    "Every element in order, even when tasks started from callbacks run in another order",
    arguments: kinds)
  func inOrderWhateverTheTaskOrder(kind: CoChannel<Int>.BufferType) async throws {
    let channel = CoChannel<Int>(bufferType: kind)
    // Tasks made on the producer's and the pump's threads run backwards in each burst, as
    // a busy machine may run them: only an order the code itself keeps survives.
    let received = try await withPlainThreadJobsReordered(window: .milliseconds(20)) {
      let producer = produce(1...30, into: channel)
      let received = try await collect(channel)
      _ = try await outcome(
        of: producer, "the producer",
        hint: "the producer was still blocked in awaitSend(_:) after the stream ended: "
          + "receive every element until the channel is closed")
      return received
    }

    #expect(received == Array(1...30), lossComment(received, of: Array(1...30)))
  }

  @Test(
    "While the channel has nothing to give, nothing wakes up to look",
    .disabled(
      if: underThreadSanitizer,
      "make tsan runs every chapter's tests in one process, which is never quiet"))
  func idleWhileWaiting() async throws {
    let channel = CoChannel<Int>(bufferType: .unlimited)
    let loop = Task { () async throws -> [Int] in
      var received: [Int] = []
      for try await element in channel.elements() { received.append(element) }
      return received
    }
    // The loop starts and waits; then nothing happens, until the process has had a quiet
    // half second (the other tests of the suite end within about a second) or four have
    // passed.
    try await Task.sleep(for: .milliseconds(150))
    let wakeups = await IdleWatch.fewestWakeups(
      in: .milliseconds(500), within: .seconds(4), atMost: 40)
    channel.offer(1)
    channel.close()

    let received = try await withDeadline(
      .seconds(2), "for try await over channel.elements()", hint: finishHint
    ) {
      try await loop.value
    }
    #expect(received == [1], "the element sent after the quiet half second must arrive")
    if let wakeups {
      #expect(
        wakeups <= 40,
        """
        the process woke up at least \(wakeups) times in every half second in which the \
        channel had nothing to give (an idle process: about 10): something looks for elements \
        over and over (a loop around poll() or Task.sleep) instead of waiting for the next \
        one; on a phone, a loop that looks keeps the CPU awake and drains the battery
        """)
    }
  }

  @Test("Elements buffered before close() all arrive, then the sequence ends")
  func closeEndsAfterTheBuffer() async throws {
    let channel = CoChannel<Int>(bufferType: .unlimited)
    for element in 1...5 { channel.offer(element) }
    channel.close()

    let received = try await collect(channel)
    #expect(received == [1, 2, 3, 4, 5], lossComment(received, of: [1, 2, 3, 4, 5]))
  }

  @Test("A channel that closes and drains is left closed, not cancelled")
  func aChannelThatEndsByItselfIsLeftAsItIs() async throws {
    let channel = CoChannel<Int>(bufferType: .unlimited)
    for element in 1...3 { channel.offer(element) }
    channel.close()

    let received = try await collect(channel)
    #expect(received == [1, 2, 3], lossComment(received, of: [1, 2, 3]))
    // The stream's end runs onTermination; give a late one a moment to show.
    let cancelledAfterwards = await eventually(within: .milliseconds(300)) { channel.isCanceled }

    #expect(
      !cancelledAfterwards,
      """
      the producer closed the channel and the loop read everything, yet the channel was \
      cancelled afterwards: the iteration ended because the channel did, and the channel \
      belongs to its producer. Others that use it (a second reader, a producer that looks \
      at isCanceled) now see a consumer that gave up instead of a channel that finished
      """)
  }

  @Test("A channel that is already closed and empty ends at once")
  func emptyClosedChannel() async throws {
    let channel = CoChannel<Int>(bufferType: .rendezvous)
    channel.close()

    #expect(try await collect(channel) == [])
  }

  @Test("Cancelling the channel ends the iteration by throwing CoChannelError.cancelled")
  func cancelThrows() async throws {
    let channel = CoChannel<Int>(bufferType: .rendezvous)
    DispatchQueue.global().startCoroutine {
      try channel.awaitSend(1)
      try channel.awaitSend(2)
      Coroutine.delay(.milliseconds(50))
      channel.cancel()
    }

    let received = Locked<[Int]>([])
    await #expect(
      throws: CoChannelError.cancelled,
      """
      a cancelled channel must end the iteration by throwing CoChannelError.cancelled, not \
      quietly as if it were closed: loop on try awaitReceive() (not for element in channel) \
      and finish the stream with any error other than .closed
      """
    ) {
      try await withDeadline(
        .seconds(2), "for try await over channel.elements()",
        hint: "when awaitReceive() throws CoChannelError.cancelled, finish the stream with "
          + "that error"
      ) {
        for try await element in channel.elements() { received.withLock { $0.append(element) } }
      }
    }
    #expect(received.value == [1, 2])
  }

  @Test("A channel cancelled before iteration starts throws at once")
  func cancelledBeforeIteration() async throws {
    let channel = CoChannel<Int>(capacity: 2)
    channel.offer(1)
    channel.cancel()

    await #expect(
      throws: CoChannelError.cancelled,
      "a cancelled channel must end the iteration by throwing CoChannelError.cancelled"
    ) { try await collect(channel) }
  }

  @Test("A loop whose task is cancelled before it starts cancels the channel")
  func taskCancelledBeforeTheLoop() async throws {
    // A few rounds: the stream's pump may start at once or later, and the loop must
    // reach the channel either way.
    for round in 1...5 {
      let channel = CoChannel<Int>(bufferType: .rendezvous)
      let loop = Task {
        withUnsafeCurrentTask { $0?.cancel() }
        for try await _ in channel.elements() {}
      }
      _ = await loop.result
      let cancelled = await eventually { channel.isCanceled }
      let closedOnly = !cancelled && channel.isClosed
      #expect(
        cancelled,
        Comment(
          rawValue: closedOnly
            ? "round \(round): the loop's task was cancelled before its first element, and "
              + "the channel was closed, not cancelled: close() keeps what the channel holds "
              + "for a reader that will never come, and a producer's next send fails with "
              + ".closed, as if it had finished, not .cancelled; a consumer that leaves must "
              + "cancel() the channel"
            : "round \(round): the loop's task was cancelled before its first element, "
              + "and the channel was left as it was: the stream ended as .cancelled before "
              + "anything was there to hear it, so its producer would wait in awaitSend(_:) "
              + "forever or feed a stream nobody reads; the consumer's end must reach the "
              + "channel even when it comes first, before the pump has started"))
      if !cancelled { break }
    }
  }

  @Test(
    "Breaking out of the loop releases the producer blocked on the channel",
    arguments: [CoChannel<Int>.BufferType.rendezvous, .buffered(capacity: 2)])
  func breakReleasesTheProducer(kind: CoChannel<Int>.BufferType) async throws {
    let channel = CoChannel<Int>(bufferType: kind)
    let producer = produceForever(into: channel)

    let firstThree = try await withDeadline(
      .seconds(2), "for try await over channel.elements()", hint: finishHint
    ) {
      var received: [Int] = []
      for try await element in channel.elements() {
        received.append(element)
        if received.count == 3 { break }
      }
      return received
    }

    #expect(firstThree == [1, 2, 3], lossComment(firstThree, of: [1, 2, 3]))
    let produced = try await outcome(
      of: producer, "the producer, after the consumer stopped", hint: releaseHint)
    #expect(throws: CoChannelError.self) { try produced.get() }
  }

  @Test("An error thrown in the loop body releases the producer too")
  func throwReleasesTheProducer() async throws {
    let channel = CoChannel<Int>(capacity: 1)
    let producer = produceForever(into: channel)

    let thrown = try await #require(throws: Boom.self) {
      try await withDeadline(.seconds(2), "for try await over channel.elements()", hint: finishHint)
      {
        // Throws at element 2, or at the first one after it if 2 never came.
        for try await element in channel.elements() where element >= 2 {
          throw Boom(tag: element)
        }
      }
    }
    #expect(
      thrown == Boom(tag: 2),
      """
      the loop never got element 2, and got \(thrown.tag) next: the stream threw away elements \
      the channel had handed over. A buffering policy that keeps only some drops them while \
      the loop is busy; keep every one, as the default, .unbounded, does
      """)

    let produced = try await outcome(
      of: producer, "the producer, after the consumer threw", hint: releaseHint)
    #expect(throws: CoChannelError.self) { try produced.get() }
  }

  @Test("Cancelling the consuming task ends the iteration promptly and releases the producer")
  func taskCancellationReleasesTheProducer() async throws {
    let channel = CoChannel<Int>(capacity: 1)
    let producer = produceForever(into: channel)
    let received = Locked<[Int]>([])
    let consuming = Started {
      for try await element in channel.elements() { received.withLock { $0.append(element) } }
    }
    // Wait for a few elements (or for the consumer to end early, which is a failure too).
    _ = await eventually { received.value.count >= 3 || consuming.isFinished }
    try #require(!consuming.isFinished, "the iteration ended before it was cancelled")

    consuming.cancel()

    _ = try await consuming.result(
      "the cancelled consumer",
      hint: "a cancelled task must not stay suspended in the iteration")
    let produced = try await outcome(
      of: producer, "the producer, after the consumer was cancelled", hint: releaseHint)
    #expect(throws: CoChannelError.self) { try produced.get() }
  }

  @Test("A loop that falls far behind still gets every element")
  func aLoopThatFallsBehindGetsEverything() async throws {
    let expected = Array(1...1_000)
    let channel = CoChannel<Int>(bufferType: .unlimited)
    for element in expected { channel.offer(element) }
    channel.close()

    let elements = channel.elements()
    // The loop starts reading once the bridge has taken everything out of the channel (or
    // after half a second, for a bridge that takes an element only when asked for one).
    _ = await eventually(within: .milliseconds(500)) { channel.isEmpty }
    let received = try await withDeadline(
      .seconds(2), "for try await over channel.elements()", hint: finishHint
    ) {
      var received: [Int] = []
      for try await element in elements { received.append(element) }
      return received
    }

    #expect(
      received == expected,
      received.count < expected.count
        ? Comment(
          rawValue: "the loop started reading only after the bridge had taken all "
            + "\(expected.count) elements out of the channel, and got \(received.count) of "
            + "them: the stream dropped the ones it had no room for. A buffering policy "
            + "that keeps only some (bufferingOldest(n), bufferingNewest(n)) loses every "
            + "element past n whenever the loop falls that far behind, which a consumer "
            + "that is busy for a moment does; keep every one, as the default, .unbounded, "
            + "does")
        : lossComment(received, of: expected))
  }

  @Test("A cancel that comes right after an element still ends the iteration with .cancelled")
  func cancelRightAfterAnElementThrows() async throws {
    let channel = CoChannel<Int>(capacity: 1)
    channel.offer(1)
    // The producer waits for room for 2. When the bridge takes 1, 2 moves into the buffer,
    // and the producer, resumed before the bridge has 1 in hand, cancels the channel: the
    // buffer (2) is dropped, and the bridge's next receive fails.
    let producer = ResumesInline()
    producer.startCoroutine {
      try channel.awaitSend(2)
      channel.cancel()
    }
    let waiting = await eventually { producer.firstTurnEnded }
    try #require(waiting, "the producer never got to wait for room in the channel")

    let received = Locked<[Int]>([])
    await #expect(
      throws: CoChannelError.cancelled,
      """
      the channel was cancelled right after it handed element 1 over, and the iteration \
      ended quietly, as if the producer had closed it: a cancelled channel is closed too \
      (isClosed is true, and its buffer is empty), so a look at the channel's state after \
      an element takes a cancel for a close, and the consumer believes it saw everything. \
      Only the error of the next receive says how the channel ended
      """
    ) {
      try await withDeadline(
        .seconds(2), "for try await over channel.elements()",
        hint: "when awaitReceive() throws CoChannelError.cancelled, finish the stream with "
          + "that error"
      ) {
        for try await element in channel.elements() { received.withLock { $0.append(element) } }
      }
    }
    #expect(received.value == [1], "element 1 was handed over before the cancel")
  }

  @Test("Cancelling the consuming task cancels the channel at once, not some time later")
  func taskCancellationCancelsTheChannelAtOnce() async throws {
    let channel = CoChannel<Int>(bufferType: .rendezvous)
    let settling = SettlingExecutor()
    let consuming = Started(on: settling) {
      for try await _ in channel.elements() {}
    }
    // Nothing is ever sent: once its executor is idle, the loop waits for an element.
    let waiting = await eventually { settling.isIdle }
    try #require(waiting && !consuming.isFinished, "the iteration ended before it was cancelled")

    // Tasks that the cancel starts are held a second: only what the cancel does itself
    // counts.
    let cancelledAtOnce = await withPlainThreadJobsReordered(window: .seconds(1)) {
      await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
        DispatchQueue.global().async {
          consuming.cancel()
          done.resume(returning: channel.isCanceled)
        }
      }
    }
    _ = try await consuming.result(
      "the cancelled consumer", hint: "a cancelled task must not stay suspended in the iteration")

    #expect(
      cancelledAtOnce,
      """
      the consuming task was cancelled while it waited for an element, and the channel was \
      still open when cancel() returned: the channel's cancel was left to a task of its own \
      (Task { … }), which runs whenever the pool gets to it, on a busy machine long after. \
      Until then the producer keeps sending into a stream nobody reads, and the code after \
      the loop sees a channel that nobody gave up; the stream's end is the moment to cancel
      """)
  }

  @Test("A backlog is taken element after element, not one receive inside another")
  func aBacklogIsNotNested() async throws {
    let expected = Array(1...300)
    let channel = CoChannel<Int>(bufferType: .unlimited)
    for element in expected { channel.offer(element) }
    channel.close()

    let received = try await collect(channel)

    #expect(received == expected, lossComment(received, of: expected))
    let depth = channel.deepestCallbackNesting
    #expect(
      depth <= 8,
      """
      with \(expected.count) elements ready in the channel, its whenReceive callbacks ran \
      \(depth) deep, each inside the one before: whenReceive calls back at once, on the same \
      thread, when an element is ready, so a callback that asks for the next element from \
      inside itself nests one call per element. A backlog of some thousands overflows the \
      thread's stack and crashes the app; ask for the next element from a fresh start \
      (a new turn of a queue), or receive in a coroutine
      """)
  }
}
