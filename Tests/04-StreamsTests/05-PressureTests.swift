import LegacyKit
import Testing
import WorkbookTesting

@testable import Streams

private let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(100))]

let finishHint =
  "the hub calls its completion handler after its last sample; finish the stream there, or "
  + "the loop waits forever"
/// For a hub that still measures after the stream has ended.
let closeHint =
  "answer what yield returns: .terminated means nobody listens any more, and the receipt for "
  + "it is .closed, the only way to stop this hub"
/// For a hub told nothing about the samples a full buffer threw away.
let droppedHint =
  "answer what yield returns: when the buffer is full it returns .dropped with the sample it "
  + "threw away, and the receipt is .dropped with that sample"
/// For a hub told that the sample just yielded was lost.
let evictedHint =
  "when the buffer is full, yield returns .dropped with the sample the buffer threw away, "
  + "which with .bufferingNewest is the oldest waiting one, not the one you yielded: report "
  + "that one"

/// What most likely keeps a loop over the samples of `hub` waiting, judged at the deadline
/// from what the hub did and what the loop got (`received`).
func diagnosis(of hub: TelemetryHub, received: [Int]) -> String {
  if received.isEmpty, hub.hasFinished, hub.handedOverCount > 0 {
    return
      "the hub handed over \(hub.handedOverCount) samples and called its completion handler, "
      + "and not one of them reached the stream: the continuation was not there yet when the "
      + "hub delivered (a hub may deliver inside startMeasuring). Make the stream and its "
      + "continuation first, then start the hub: \(registerFirst)"
  }
  if !hub.hasFinished, !hub.isMeasuring, hub.receipts.last == .closed {
    // The loop still waits, so the stream had not ended: the .closed came from a live stream.
    return
      "the hub stopped measuring at a .closed receipt, \(hub.receipts.count) samples into its "
      + "session, while the loop was still reading: the stream had not ended, so nothing "
      + "should have said .closed. .closed means nobody listens any more; was a full buffer "
      + "answered .closed? The hub then never finishes its session, so the stream never ends"
  }
  return finishHint
}

/// Iterates `stream` to its end and returns the numbers of the samples it yielded.
private func numbers(
  in stream: AsyncStream<Sample>, from hub: TelemetryHub,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [Int] {
  let progress = Locked<[Int]>([])
  return try await withDeadline(
    .seconds(2), "the loop over samples(from:keepingNewest:)",
    diagnosis: { diagnosis(of: hub, received: progress.value) }, sourceLocation: sourceLocation
  ) {
    var seen: [Int] = []
    for await sample in stream {
      seen.append(sample.number)
      progress.withLock { $0.append(sample.number) }
    }
    return seen
  }
}

/// The contract of `samples(from:keepingNewest:)`: each path, what the loop and the hub see,
/// and the test that checks it (— where a column does not apply, and why). Tests whose name
/// is in the stress file are in `05-PressureStressTests.swift`.
///
/// | path | samples (count, order) | end | hub (receipts, running) | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | nobody reads while the hub sends | the newest `capacity`, in order: `keepsTheNewestSamples`; none with a capacity of 0: `roomForNone` | — | each sample's receipt, kept or the one really lost: `keepsTheNewestSamples`; started before the call returns: `keepsTheNewestSamples` | inside `startMeasuring`, on its queue, later: `keepsTheNewestSamples` |
/// | samples keep coming, full or not, read or not | — | — | — | each receipt at once: the hub's thread never waits in the closure (asleep or blocked, measured by the thread's own scheduler statistics, so a busy machine does not count): `answersAtOnce` |
/// | the hub's session ends | each sample received or reported lost: `endsAfterTheLastSample` | after the last sample: `endsAfterTheLastSample` | — | — |
/// | the loop breaks | — | — | stopped at its next sample (`.closed`): `stopsTheHubWhenTheLoopBreaks` | — |
/// | the task is cancelled | — | the loop ends: `stopsTheHubWhenTheTaskIsCancelled` | stopped at its next sample: `stopsTheHubWhenTheTaskIsCancelled` | — |
/// | the stream is dropped unread | — | — | stopped at its next sample (`.closed`): `stopsTheHubWhenTheStreamIsDropped` | — |
/// | sessions read slowly and ended every way at random moments | in order, nothing lost unreported: `sessionsEndedAtRandom` | — | stopped: `sessionsEndedAtRandom` | from other threads: `sessionsEndedAtRandom` |
/// | a second session after the first | its own samples: `streamsAgain` | — | started again: `streamsAgain` | — |
/// | a failure | — the hub reports none: a session only ends | | | |
@Suite("4.5 Pressure")
struct PressureTests {
  @Test(
    "Keeps the newest samples while nobody reads, and tells the hub what was kept and lost",
    arguments: scripts)
  func keepsTheNewestSamples(script: CallbackScript) async throws {
    let hub = TelemetryHub(sampleCount: 10, script: script)

    let stream = samples(from: hub, keepingNewest: 3)
    #expect(
      hub.isMeasuring || hub.hasFinished,
      "samples(from:keepingNewest:) returned before it started the hub: start it inside the call, so the session begins when the caller asks for it (a hub that delivers inside startMeasuring delivers then), not at some later moment from a task of its own"
    )
    // Nobody reads until the hub has handed over all ten samples.
    let done = await eventually { hub.hasFinished }
    try #require(
      done, "the hub never finished its session: start it with startMeasuring(receive:completion:)")
    let received = try await numbers(in: stream, from: hub)

    #expect(
      received.count == 10 || !hub.lostSamples.isEmpty,
      because("\(10 - received.count) samples were lost, and no receipt said so: \(droppedHint)"))
    #expect(
      received == [8, 9, 10],
      "with nobody reading, only the newest 3 samples may wait: .bufferingNewest(capacity)")
    #expect(
      Array(hub.receipts.prefix(3)) == [
        .accepted(room: 2), .accepted(room: 1), .accepted(room: 0),
      ],
      "while there is room, yield returns .enqueued(remaining:): answer .accepted(room: remaining)"
    )
    #expect(hub.lostSamples.map(\.number) == Array(1...7), because(evictedHint))
  }

  @Test("With room for none, no sample waits unread: each one nobody waits for is lost")
  func roomForNone() async throws {
    let hub = TelemetryHub(sampleCount: 5, script: .synchronously)

    let stream = samples(from: hub, keepingNewest: 0)
    let done = await eventually { hub.hasFinished }
    try #require(
      done, "the hub never finished its session: start it with startMeasuring(receive:completion:)")
    let received = try await numbers(in: stream, from: hub)

    #expect(
      received.isEmpty && hub.lostSamples.map(\.number) == Array(1...5),
      """
      keepingNewest: 0 leaves room for no sample to wait unread, so with nobody reading, \
      each of the 5 samples is lost and its receipt says so; but the loop still got \
      \(received) afterwards and the hub was told of \(hub.lostSamples.count) lost. The \
      capacity is the caller's limit, 0 included: do not raise it
      """)
  }

  @Test(
    "Answers every sample at once, full or not, without making the hub wait", arguments: scripts)
  func answersAtOnce(script: CallbackScript) async throws {
    let hub = TelemetryHub(sampleCount: 40, interval: .milliseconds(1), script: script)

    // Read the first few slowly, then nothing: the stream is full for most samples.
    let stream = samples(from: hub, keepingNewest: 3)
    var iterator = stream.makeAsyncIterator()
    for _ in 0..<3 {
      _ = await iterator.next()
      try await Task.sleep(for: .milliseconds(5))
    }
    let done = await eventually { hub.hasFinished }
    try #require(done, "the hub never finished its session")

    let waited = hub.longestWaitInReceive
    #expect(
      waited < .milliseconds(10),
      "one call of the receive closure kept the hub's thread waiting for \(waited) (asleep or blocked, not merely slow: a sleep, a semaphore, a lock held elsewhere): the hub measures at its own pace and cannot wait for a slow app, so each receipt must come at once, whether the sample was kept or dropped"
    )
  }

  @Test(
    "Ends after the hub's last sample, each sample either received or reported lost",
    arguments: scripts)
  func endsAfterTheLastSample(script: CallbackScript) async throws {
    let hub = TelemetryHub(sampleCount: 20, interval: .milliseconds(5), script: script)

    let received = try await numbers(in: samples(from: hub, keepingNewest: 3), from: hub)
    let lost = hub.lostSamples.map(\.number)

    #expect(received.last == 20, "the newest sample is never the one dropped")
    #expect(received == received.sorted(), "samples arrive in order")
    let both = Set(received).intersection(lost).sorted()
    #expect(
      both.isEmpty,
      because("samples \(both) were received and also reported lost: \(evictedHint)"))
    #expect(
      (received + lost).sorted() == Array(1...20),
      because(
        "every sample is either received or reported lost, once: received \(received), lost "
          + "\(lost); \(droppedHint)"))
  }

  @Test("Stops the hub at its next sample once the loop breaks")
  func stopsTheHubWhenTheLoopBreaks() async throws {
    // A long session: ten seconds of samples.
    let hub = TelemetryHub(sampleCount: 2000, interval: .milliseconds(5), script: .default)

    let received = try await withDeadline(
      .seconds(2), "the loop over samples(from:keepingNewest:)", hint: "yield each sample"
    ) {
      var seen: [Int] = []
      for await sample in samples(from: hub, keepingNewest: 3) {
        seen.append(sample.number)
        if seen.count == 3 { break }
      }
      return seen
    }
    let stopped = await eventually { !hub.isMeasuring }

    #expect(received.count == 3)
    #expect(
      stopped,
      because(
        "the hub still measures after the loop broke, and no receipt said .closed: either "
          + "the stream ended and its .terminated was not answered (\(closeHint)), or the stream "
          + "never ended, because something the hub keeps (a closure of it) holds the stream "
          + "itself, so leaving the loop let go of nothing"))
    #expect(hub.receipts.last == .closed, "the hub stops when a receipt says .closed")
  }

  @Test("Stops the hub at its next sample when the stream is dropped unread")
  func stopsTheHubWhenTheStreamIsDropped() async throws {
    let hub = TelemetryHub(sampleCount: 2000, interval: .milliseconds(5), script: .default)
    do {
      let stream = samples(from: hub, keepingNewest: 3)
      withExtendedLifetime(stream) {}
    }
    let stopped = await eventually { !hub.isMeasuring }

    #expect(
      stopped,
      because("the stream was dropped without being read, and the hub still measures: \(closeHint)")
    )
    #expect(hub.receipts.last == .closed, "the hub stops when a receipt says .closed")
  }

  @Test("Stops the hub at its next sample once the task iterating is cancelled")
  func stopsTheHubWhenTheTaskIsCancelled() async throws {
    let hub = TelemetryHub(sampleCount: 2000, interval: .milliseconds(5), script: .default)
    let stream = samples(from: hub, keepingNewest: 3)
    let received = Locked(0)
    let task = Task {
      for await _ in stream {
        received.withLock { $0 += 1 }
      }
    }
    defer { task.cancel() }

    let arrived = await eventually { received.value >= 3 }
    try #require(arrived, "no samples arrived: start the hub and yield each sample")
    task.cancel()
    try await withDeadline(
      .seconds(2), "the cancelled loop over samples(from:keepingNewest:)",
      hint: "a cancelled loop over an AsyncStream ends by itself; is the receive closure blocking?"
    ) {
      await task.value
    }
    let stopped = await eventually { !hub.isMeasuring }

    #expect(
      stopped, because("the hub still measures after the task was cancelled: \(closeHint)"))
  }

  @Test("Streams from the same hub again after a session")
  func streamsAgain() async throws {
    let hub = TelemetryHub(sampleCount: 5, script: .synchronously)

    let first = try await numbers(in: samples(from: hub, keepingNewest: 2), from: hub)
    let second = try await numbers(in: samples(from: hub, keepingNewest: 5), from: hub)

    #expect(first == [4, 5])
    #expect(second == [1, 2, 3, 4, 5])
  }
}
