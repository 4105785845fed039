import ChatKit
import Foundation
import Testing
import WorkbookTesting

@testable import Capstone

/// Collects the first `count` lines of `lines` (fewer if it ends first).
private func first(
  _ count: Int, of lines: AsyncThrowingStream<String, any Error>
) async throws -> [String] {
  var received: [String] = []
  for try await line in lines {
    received.append(line)
    if received.count == count { break }
  }
  return received
}

/// Joins `server`, whose welcome has `count` lines, and hangs up once they have all come,
/// with every callback held back: the welcome, each line and the end wait in `held` until
/// the test releases them, back to back on one thread.
private func heldWelcomeLinesAndEnd(
  from server: ChatServer, lines count: Int
) async throws -> (held: HeldCallbacks, lines: AsyncThrowingStream<String, any Error>) {
  let held = HeldCallbacks()
  let connection = ChatConnection(callbacksVia: held.schedule)
  let lines = connection.incomingLines()
  connection.connect(port: server.port, name: "alice") { _ in }
  let arrived = await eventually { held.heldCount >= 1 + count }
  try #require(arrived, "the test's server did not send its \(count) lines")
  connection.disconnect()
  let ended = await eventually { held.heldCount >= 2 + count }
  try #require(ended, "the test's connection did not end")
  return (held, lines)
}

/// What `collect` saw: the lines, and how the stream ended (nil: it had not ended).
private struct Collected {
  var lines: [String] = []
  var end: Result<Void, any Error>?
  /// True once `done` held for the lines: nothing more to wait for.
  var complete = false
}

/// The lines `lines` yields until `done` holds for them, the stream ends, or `limit` passes,
/// whichever comes first: a stream that loses lines ends the wait with what it kept. A
/// stream that yields nothing and does not end is recorded as never resumed, naming `what`
/// and the likely cause.
private func collect(
  _ what: String, from lines: AsyncThrowingStream<String, any Error>,
  within limit: Duration = .seconds(2),
  sourceLocation: SourceLocation = #_sourceLocation,
  until done: @escaping @Sendable ([String]) -> Bool
) async -> Collected {
  let seen = Locked(Collected())
  let reader = Task {
    do {
      for try await line in lines {
        if seen.withLock({
          $0.lines.append(line)
          $0.complete = done($0.lines)
          return $0.complete
        }) {
          return
        }
      }
      seen.withLock { $0.end = .success(()) }
    } catch {
      seen.withLock { $0.end = .failure(error) }
    }
  }
  _ = await eventually(within: limit) {
    let collected = seen.value
    return collected.complete || collected.end != nil
  }
  reader.cancel()
  let collected = seen.value
  if collected.lines.isEmpty && collected.end == nil {
    Issue.record(
      Comment(
        rawValue: "\(neverResumedMarker) \(what) did not arrive within 2 seconds. Likely cause: "
          + "didReceive never yields into the stream: set the delegate, and keep it alive (the "
          + "connection holds it weakly: let the stream's onTermination closure capture it)."),
      sourceLocation: sourceLocation)
  }
  return collected
}

/// Records a failure if the stream ended with an error while the connection was open.
private func expectNoError(
  _ collected: Collected, sourceLocation: SourceLocation = #_sourceLocation
) {
  if case .failure(let error) = collected.end {
    Issue.record(
      Comment(rawValue: "the stream ended with \(error) while the connection was still open"),
      sourceLocation: sourceLocation)
  }
}

/// The contract of `incomingLines()`: each path, what the consumer and the server see, and
/// the test that checks it (— where a column does not apply, and why).
///
/// | path | the stream | resources: delegate, connection | order, timing |
/// | --- | --- | --- | --- |
/// | lines after the welcome | each one, whatever it says (a greeting that starts like the welcome too): `linesArriveInOrder`, `burstIsKept` | the delegate lives on: `delegateStaysAlive` | in order: `linesArriveInOrder`; 200 lines and the end in one burst: `burstThenEnd`; in order and before the end even when tasks started on the callbacks' thread run backwards (`withPlainThreadJobsReordered`): `inOrderWhateverTheTaskOrder` |
/// | lines before anyone iterates | all kept (2000, more than any small buffer): `burstIsKept` | — | in order: `burstIsKept` |
/// | the delegate set from a task, after `incomingLines()` returned | — not caught every run: the task has run by the time the caller connects on every machine we saw; only holding every thread of the pool shows it, which disturbs the suite's other tests | | |
/// | lines with spaces around them, or starting with `!` | each one as sent: `linesComeAsSent` | — | — |
/// | our `disconnect()` | finishes cleanly: `disconnectFinishesCleanly` | delegate let go: `letsGoWhenItEnds` | the end after the last line: `burstThenEnd` |
/// | the server closes | throws `.closedByServer`: `serverLossThrows` | delegate let go: `letsGoWhenItEnds` | — |
/// | the connection is reset | throws `.socket(…)`: `resetThrows` | — | — |
/// | the consumer breaks out | ends with it, unless a copy is kept elsewhere (a cache of streams, a global): `stoppingDisconnects`, which tells a stream that never ended (its delegate still held, no hang-up) from one that ended without hanging up | hangs up, as the stream ends (a line sent right after fails): `stoppingDisconnects`; delegate let go: `letsGoWhenItEnds` | — |
/// | the consumer's task is cancelled | ends | hangs up, delegate let go: `letsGoWhenItEnds` | — |
/// | the consumer leaves before a connection was made (its connect was refused) | — | delegate let go: `letsGoWhenItEnds` | — |
/// | every event handed on through the main queue | — not caught: it works whenever the main thread serves its queue, as in every test; holding the main thread to show it would stall the suite's main-actor tests in the same process | | |
/// | a second call | — one delegate per connection: not part of the contract | | |
/// | streams kept in a table by connection (`ObjectIdentifier`) | — a new connection at a freed one's address would be handed the old, ended stream, but no test can make the allocator reuse an address; the table keeps each stream open after its consumer left, which `stoppingDisconnects` names | | |
/// | callbacks' thread | — the stream takes lines on any thread, one at a time | | |
@Suite("8.2 Incoming messages")
struct IncomingMessagesTests {
  @Test("200 lines and the end, delivered in one burst, all come out in order, then the end")
  func burstThenEnd() async throws {
    let greeting = (1...200).map { "* line \($0)" }
    let server = try startedServer(greeting: greeting)
    defer { server.stop() }
    // The welcome, 200 lines and the end, released back to back on one thread while no task
    // can run.
    let (held, lines) = try await heldWelcomeLinesAndEnd(from: server, lines: greeting.count)
    // Without the pool check for that moment: the test holds every thread of the pool itself.
    await withoutPoolCheck { await held.releaseWhileThePoolIsHeld() }

    // Read to the end: the end is part of what was sent.
    let collected = await collect("the first of 200 lines", from: lines) { _ in false }
    let received = collected.lines
    if received == greeting && collected.end == nil {
      Issue.record(
        "all 200 lines arrived, and then the connection ended, but the stream never finished: the end the delegate heard after the last line must finish the stream"
      )
    }
    if (!received.isEmpty || collected.end != nil) && received != greeting {
      let kept = Set(received)
      let lost = greeting.filter { !kept.contains($0) }
      let buffer = boundedBufferLoss(sent: greeting, received: received, of: "lines")
      let cause =
        ": the consumer must get each line in the order the delegate heard it, and the end "
        + "only after the last one (a line handed on to be yielded later can overtake "
        + "another, or come after the end, and be lost)"
      Issue.record(
        Comment(
          rawValue: "200 lines came one delegate call at a time, in order, then the end; the "
            + "stream gave \(received.count) of them"
            + (buffer.map { ": \($0.sentence)" } ?? "")
            + (buffer?.onlyCause == true
              ? ""
              : (lost.isEmpty ? "" : ": lines were lost (the first: \"\(lost[0])\")")
                + (received == greeting.filter(kept.contains) ? "" : ", and came out of order")
                + cause)))
    }
    if case .failure(let error) = collected.end {
      Issue.record(
        Comment(
          rawValue: "after disconnect() the stream must finish without an error, but it threw "
            + "\(error)"))
    }
  }

  @Test(
    "Lines and the end keep their order even when tasks made on the callbacks' thread run backwards"
  )
  func inOrderWhateverTheTaskOrder() async throws {
    let greeting = (1...30).map { "* line \($0)" }
    let server = try startedServer(greeting: greeting)
    defer { server.stop() }
    // The welcome, 30 lines and the end are held, then run back to back on one thread,
    // while tasks started on that thread run backwards, as a busy machine may run them:
    // only an order the bridge itself keeps survives.
    let (held, lines) = try await heldWelcomeLinesAndEnd(from: server, lines: greeting.count)

    let collected = await withPlainThreadJobsReordered(window: .milliseconds(20)) {
      await held.release()
      return await collect("the first of 30 lines", from: lines) { _ in false }
    }
    let received = collected.lines
    if collected.end == nil && !received.isEmpty {
      Issue.record(
        Comment(
          rawValue: "the connection ended after 30 lines, and the stream gave \(received.count) "
            + "of them but never ended: the end must reach the stream when "
            + "didDisconnectWithError comes"))
    } else if received != greeting {
      Issue.record(
        Comment(
          rawValue: "30 lines came one delegate call at a time, in order, then the end; the "
            + "stream gave \(received.count) of them"
            + (received.isEmpty ? " and then ended" : ": \(received.prefix(5))…")
            + ". Something handed each line, or the end, to a task of its own: tasks run in "
            + "any order, so a line can overtake another, and the end can overtake lines, which "
            + "are then lost"))
    }
  }

  @Test("Every line after the welcome arrives, in order")
  func linesArriveInOrder() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    try await legacyConnect(connection, port: server.port, name: "alice")
    let bob = try await join(server, as: "bob")
    for text in ["one", "two", "three"] { try await bob.say(text) }

    let collected = await collect("the first 4 lines of incomingLines()", from: lines) {
      $0.count == 4
    }
    let received = collected.lines

    expectNoError(collected)
    if !received.isEmpty {
      #expect(
        received == ["* bob joined", "bob: one", "bob: two", "bob: three"],
        Comment(
          rawValue:
            "lines were lost or came out of order: yield every line as it arrives, and keep "
            + "every line until it is read (the default buffering policy, .unbounded)"))
    }
  }

  @Test("Lines that arrive before anyone iterates are all kept, in order")
  func burstIsKept() async throws {
    // A message of the day that starts like the welcome is a line like any other.
    let greeting = ["* welcome to the workbook chat, be kind"] + (1...2_000).map { "* rule \($0)" }
    let server = try startedServer(greeting: greeting)
    defer { server.stop() }
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    try await legacyConnect(connection, port: server.port, name: "alice")
    // The greeting came with the welcome: it is in the stream before anyone iterates.
    await callbacksDelivered(connection)
    connection.disconnect()

    let collected = await collect("the server's greeting", from: lines) { _ in false }
    let received = collected.lines

    if case .failure(let error) = collected.end {
      Issue.record(
        Comment(
          rawValue: "after disconnect() the stream must finish without an error (a nil error "
            + "is a normal end: finish(throwing: nil)), but it threw \(error)"))
    }
    if !received.isEmpty, received == Array(greeting.dropFirst()) {
      Issue.record(
        Comment(
          rawValue: "the server's first line, \"\(greeting[0])\", never reached the stream: "
            + "every line the delegate hears is the consumer's, whatever it says (the "
            + "connection's own welcome never reaches the delegate, so nothing needs filtering)"))
    } else if !received.isEmpty {
      #expect(
        received == greeting,
        Comment(
          rawValue:
            "lines were lost before anyone iterated: a stream must keep every line until it is "
            + "read (the default buffering policy, .unbounded), not only the newest or oldest"))
    }
  }

  @Test("Lines keep arriving long after the stream was made: the delegate stays alive")
  func delegateStaysAlive() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    try await legacyConnect(connection, port: server.port, name: "alice")
    // Give a delegate that nothing holds the time to go away.
    try await Task.sleep(for: .milliseconds(50))
    let bob = try await join(server, as: "bob")
    try await bob.say("still there?")

    let collected = await collect("the first 2 lines of incomingLines()", from: lines) {
      $0.count == 2
    }
    let received = collected.lines

    expectNoError(collected)
    if !received.isEmpty {
      #expect(
        received == ["* bob joined", "bob: still there?"],
        "lines were lost or came out of order")
    }
  }

  @Test("When the server goes away, iteration ends with its error")
  func serverLossThrows() async throws {
    let server = try startedServer()
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    try await legacyConnect(connection, port: server.port, name: "alice")

    server.stop()

    let error = await #expect(
      throws: ChatConnectionError.self,
      Comment(
        rawValue: "when the server goes away the stream must finish with its error "
          + "(finish(throwing: error)), not as if we had hung up")
    ) {
      try await withDeadline(
        .seconds(2), "iterating incomingLines() after the server stopped",
        hint: "didDisconnectWithError never finishes the stream"
      ) {
        try await first(100, of: lines)
      }
    }
    #expect(error == .closedByServer, "finish with the connection's own error, unchanged")
  }

  @Test("After disconnect(), iteration ends without an error")
  func disconnectFinishesCleanly() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    try await legacyConnect(connection, port: server.port, name: "alice")

    connection.disconnect()

    do {
      let received = try await withDeadline(
        .seconds(2), "iterating incomingLines() after disconnect()",
        hint: "didDisconnectWithError(nil) never finishes the stream"
      ) {
        try await first(100, of: lines)
      }
      #expect(received.isEmpty)
    } catch is DeadlineExceeded {
      // Recorded as never resumed.
    } catch {
      Issue.record(
        Comment(
          rawValue: "after disconnect() the stream must finish without an error (a nil error "
            + "is a normal end: finish(throwing: nil)), but it threw \(error)"))
    }
  }

  @Test("Stopping the iteration disconnects: the server sees us leave")
  func stoppingDisconnects() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let connection = ChatConnection()

    let received = try await withDeadline(
      .seconds(2), "the first line of incomingLines()",
      hint: "bob's line never came out of the stream: didReceive never yields into the stream, "
        + "or the line was skipped or dropped on its way"
    ) {
      let lines = connection.incomingLines()
      try await legacyConnect(connection, port: server.port, name: "alice")
      try await bob.say("hi")
      return try await first(1, of: lines)  // then the loop breaks and the stream goes away
    }

    #expect(received == ["bob: hi"])
    // The stream is gone: the hang-up was asked for already, so a line sent now must fail.
    let sentAfterwards = await withCheckedContinuation { continuation in
      connection.send("still here?") { continuation.resume(returning: $0 == nil) }
    }
    let left = await eventually { bob.recorder.lines.value.contains("* alice left") }
    // Never hung up: did the stream end at all? Ended, it lets go of the delegate it kept.
    if sentAfterwards, !left, connection.delegate != nil {
      Issue.record(
        """
        the consumer had stopped reading, and 2 seconds later the connection had neither \
        hung up nor let go of its delegate: the stream did not end with its consumer. A \
        stream ends when its consumer stops only once nothing else holds it: a copy of the \
        stream kept beyond the loop (in a cache, a table by connection, a global) keeps it \
        open, so its termination handler never runs and the socket and the seat in the chat \
        outlive their only reader; or nothing hangs up, and something other than the stream \
        keeps the delegate alive
        """)
      return
    }
    #expect(
      !sentAfterwards,
      """
      the consumer had stopped reading, yet the connection still sent a line afterwards: \
      it was not hung up as the stream ended, but later (or not at all), so the socket and \
      the seat in the chat outlive their only reader
      """)
    if !left {
      Issue.record(
        """
        expected alice to leave once nobody listens to her lines: disconnect() in the \
        stream's onTermination
        """)
    }
  }

  @Test("When the connection is reset, iteration ends with the connection's own error")
  func resetThrows() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    try await legacyConnect(connection, port: server.port, name: "alice")

    server.disconnect("alice", reset: true)

    let outcome = await Result {
      try await withDeadline(
        .seconds(3), "iterating incomingLines() after the connection was reset",
        hint: "didDisconnectWithError never finishes the stream"
      ) {
        try await first(100, of: lines)
      }
    }
    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    guard case .socket? = outcome.failure as? ChatConnectionError else {
      Issue.record(
        Comment(
          rawValue: "the connection was reset (the legacy error is .socket(…), ECONNRESET), and "
            + "the stream \(outcome.described): it must finish with the connection's own "
            + "error, unchanged, so that the consumer can tell a reset from a server that closed"))
      return
    }
  }

  @Test("Whichever way the stream ends, it lets go of its delegate, and hangs up when left")
  func letsGoWhenItEnds() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let leak =
      "the connection still holds a delegate once the stream has ended: whatever receives "
      + "its calls must live exactly as long as the stream, and no longer, or every chat "
      + "leaves it behind"

    // 1. We hang up: the stream finishes, and lets go.
    let hangingUp = ChatConnection()
    let hangUpLines = hangingUp.incomingLines()
    try await legacyConnect(hangingUp, port: server.port, name: "ada")
    hangingUp.disconnect()
    _ = await collect("the end of incomingLines() after disconnect()", from: hangUpLines) {
      _ in false
    }
    let released = await eventually { hangingUp.delegate == nil }
    #expect(released, Comment(rawValue: leak + " (after disconnect())"))
    if !released { return }

    // 2. The server closes: the same.
    let dropped = ChatConnection()
    let droppedLines = dropped.incomingLines()
    try await legacyConnect(dropped, port: server.port, name: "cy")
    server.disconnect("cy")
    _ = await collect("the end of incomingLines() after the server closed", from: droppedLines) {
      _ in false
    }
    let releasedAfterLoss = await eventually { dropped.delegate == nil }
    #expect(releasedAfterLoss, Comment(rawValue: leak + " (after the server closed)"))
    if !releasedAfterLoss { return }

    // 3. The consumer breaks out of its loop: the stream goes away with it.
    let leaving = ChatConnection()
    try await withDeadline(
      .seconds(2), "the first line of incomingLines()",
      hint: "bob's line never came out of the stream: didReceive never yields into the stream, "
        + "or the line was skipped or dropped on its way"
    ) {
      let lines = leaving.incomingLines()
      try await legacyConnect(leaving, port: server.port, name: "dee")
      try await bob.say("hi")
      _ = try await first(1, of: lines)
    }
    let left = await eventually { bob.recorder.lines.value.contains("* dee left") }
    #expect(left, "dee should leave once nobody reads her lines")
    let releasedAfterBreak = await eventually { leaving.delegate == nil }
    #expect(releasedAfterBreak, Comment(rawValue: leak + " (after the consumer stopped)"))
    if !releasedAfterBreak { return }

    // 4. The consumer's task is cancelled while it waits for a line.
    let cancelled = ChatConnection()
    let lines = cancelled.incomingLines()
    try await legacyConnect(cancelled, port: server.port, name: "eve")
    let consumer = Task {
      for try await _ in lines {}
    }
    consumer.cancel()
    _ = await consumer.result
    let hungUp = await eventually { bob.recorder.lines.value.contains("* eve left") }
    #expect(
      hungUp,
      "the task reading incomingLines() was cancelled, and the connection stayed open: a consumer that stops, however it stops, has no more use for the connection"
    )
    let releasedAfterCancel = await eventually { cancelled.delegate == nil }
    #expect(releasedAfterCancel, Comment(rawValue: leak + " (after the consumer was cancelled)"))
    if !releasedAfterCancel { return }

    // 5. The connect is refused (the name is taken), so no connection ever ends: the caller
    // drops the stream it made for it.
    let refused = ChatConnection()
    do {
      let unread = refused.incomingLines()
      let outcome = await Result {
        try await legacyConnect(refused, port: server.port, name: "bob")
      }
      try #require(outcome.failure != nil, "the test's server let a second bob in")
      _ = unread
    }
    let releasedAfterRefusal = await eventually { refused.delegate == nil }
    #expect(
      releasedAfterRefusal,
      Comment(
        rawValue: leak + " (the connect was refused and the stream dropped, so no "
          + "didDisconnectWithError ever came: only the stream's end can let go)"))
  }
}

extension IncomingMessagesTests {
  @Test("Each line comes as the server sent it: spaces kept, and one that starts with ! too")
  func linesComeAsSent() async throws {
    let greeting = [
      "  an indented line, with two spaces after it  ",
      "! a line that starts like a refusal, and is just a line",
      "* the last line",
    ]
    let server = try startedServer(greeting: greeting)
    defer { server.stop() }
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    // Only the lines here, not when the delegate is set (see the table).
    _ = await eventually { connection.delegate != nil }
    try await legacyConnect(connection, port: server.port, name: "alice")

    let collected = await collect("the first 3 lines of incomingLines()", from: lines) {
      $0.count == 3
    }

    let ending = collected.end.map { end in
      switch end {
      case .success: " and then it finished"
      case .failure(let error): " and then it threw \(error)"
      }
    }
    #expect(
      collected.lines == greeting,
      Comment(
        rawValue: "the server sent \(greeting), and the stream gave \(collected.lines)"
          + (ending ?? "") + ": every line after the welcome is a message, to pass on as it "
          + "came, spaces and all, whatever it starts with; only the delegate's "
          + "didDisconnect ends the stream"))
  }
}
