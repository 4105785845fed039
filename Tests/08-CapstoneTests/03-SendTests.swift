import Foundation
import Testing
import WorkbookTesting

@testable import Capstone
@testable import ChatKit

/// The contract of `send(_:)`: each path, what the caller and the others see, and the test
/// that checks it (— where a column does not apply, and why).
///
/// | path | result, error | the connection | thread, order, timing |
/// | --- | --- | --- | --- |
/// | a valid line | returns once on its way: `sentLinesArrive` | stays open | in order: `sentLinesArrive`, 200 in a row: `manySendsInOrder`; suspends, and does not poll for a completion 1.5 s late: `sendSuspends`; a completion 2.5 s late holds no thread of any task: `slowCompletion` |
/// | exactly 1024 bytes (ASCII or not) | returns, delivered: `lengthLimit` | stays open | — |
/// | 1025 bytes, or a newline (inside or at the end) | `.invalidLine`: `lengthLimit`, `invalidLineThrows` | stays open, the next line goes: `invalidLineThrows` | — |
/// | before joining | `.notConnected`, unchanged, for an empty line too: `sendBeforeConnectThrows` | — | — |
/// | after `disconnect()` | the connection's error: `sendAfterDisconnectThrows` | — | — |
/// | waiting to go out when `disconnect()` comes | throws the connection's `.cancelled`, unchanged (not `CancellationError`: no task was cancelled), never returns: `cutOffByDisconnect` | — | — |
/// | an invalid line in a cancelled task | throws, `CancellationError` or `.invalidLine`, never returns: `cancelledInvalidLineThrows` | — | — |
/// | in a cancelled task | returns or `CancellationError`: `cancelledSend` | stays open, the next line goes: `cancelledSend` | — |
/// | the task cancelled while the send waits for its completion | returns or `CancellationError`: `cancelledWhileSending` | stays open, the next line goes: `cancelledWhileSending` | — |
/// | the task cancelled at the moment the completion comes | returns or `CancellationError`, once: `cancelledAsTheCompletionComes` | — | the cancel and the completion on two threads, aimed at the moment the winner flips, round after round: `cancelledAsTheCompletionComes` (a flag looked at and set in two lock steps is caught in about one run of six: its gap is a few nanoseconds, and nothing the test can pause lies inside it) |
/// | many at once | each returns once its line is on its way: `concurrentSends` | — | all delivered, in any order: `concurrentSends` |
/// | completion twice / never | — the legacy contract: exactly once | | |
/// | how it waits: a checked or an unsafe continuation, resumed with `resume(with:)` a `Result` or on two paths | — not a contract matter: each passes when it resumes once; an unsafe one earns the runner's advisory note (`unsafe-continuation`), which its catalogued alternative expects | | |
@Suite("8.3 Send")
struct SendTests {
  @Test("A sent line reaches the others, in order")
  func sentLinesArrive() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let connection = ChatConnection()
    try await legacyConnect(connection, port: server.port, name: "alice")

    for text in ["one", "two", "three"] {
      try await withDeadline(
        .seconds(2), "send(\"\(text)\")",
        hint: "the completion's success path (error == nil) never resumes the continuation"
      ) {
        try await connection.send(text)
      }
    }

    await eventually("bob to receive alice's three lines, in order") {
      bob.recorder.lines.value.filter { $0.hasPrefix("alice: ") }
        == ["alice: one", "alice: two", "alice: three"]
    }
    connection.disconnect()
  }

  @Test("send(_:) suspends while it waits, leaving its thread free for the completion")
  func sendSuspends() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    // The completions run on the sender's one thread, behind it, as on the main queue;
    // the send's comes 1.5 seconds late, as from a slow network.
    let executor = OneThreadExecutor()
    let late = Locked(Duration.zero)
    let connection = ChatConnection(callbacksVia: callbacks(on: executor, late: late))
    try await legacyConnect(connection, port: server.port, name: "alice")
    late.withLock { $0 = pollingWindow }
    let stepsBefore = executor.jobsRun

    try await withDeadline(
      .seconds(5), "send(\"hello\")",
      hint: "the completion's success path (error == nil) never resumes the continuation",
      on: executor
    ) {
      try await connection.send("hello")
    }
    expectNoPolling(
      executor, stepsBefore: stepsBefore, "send(\"hello\")", waitingFor: "a completion")

    await eventually("bob to receive alice's line") {
      bob.recorder.lines.value.contains("alice: hello")
    }
    connection.disconnect()
  }

  @Test("Sending before joining throws .notConnected, an empty line too", arguments: ["hello", ""])
  func sendBeforeConnectThrows(line: String) async throws {
    let connection = ChatConnection()

    let error = await #expect(
      throws: ChatConnectionError.self,
      Comment(
        rawValue: "sending before joining must throw the connection's error (.notConnected): the "
          + "completion's error was swallowed, or never waited for"
          + (line.isEmpty
            ? ", or the empty line was never handed to the connection: it is a line like any "
              + "other, for the connection to judge"
            : ""))
    ) {
      try await withDeadline(
        .seconds(2), "send(_:) before connecting",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await connection.send(line)
      }
    }
    #expect(error == .notConnected, "throw the connection's own error, unchanged")
  }

  @Test(
    "A line with a newline in it, or at its end, throws .invalidLine, and the next line still goes",
    arguments: ["two\nlines", "one line\n"])
  func invalidLineThrows(line: String) async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let connection = ChatConnection()
    try await legacyConnect(connection, port: server.port, name: "alice")

    let error = await #expect(
      throws: ChatConnectionError.self,
      Comment(
        rawValue: "\(line.debugDescription) has a newline, so it must throw the connection's error "
          + "(.invalidLine): the completion's error was swallowed, or never waited for, or the "
          + "line was changed (a newline trimmed) before it was sent")
    ) {
      try await withDeadline(
        .seconds(2), "send(\(line.debugDescription))",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await connection.send(line)
      }
    }
    #expect(error == .invalidLine, "throw the connection's own error, unchanged")
    try await withDeadline(
      .seconds(2), "send(\"fine\")",
      hint: "the completion's success path (error == nil) never resumes the continuation"
    ) {
      try await connection.send("fine")
    }
    await eventually("bob to receive alice's valid line") {
      bob.recorder.lines.value.contains("alice: fine")
    }
    connection.disconnect()
  }

  @Test("Sending after disconnect() throws")
  func sendAfterDisconnectThrows() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    try await legacyConnect(connection, port: server.port, name: "alice")
    connection.disconnect()

    await #expect(
      throws: ChatConnectionError.self,
      Comment(
        rawValue:
          "sending after disconnect() must throw the connection's error: the completion's error "
          + "was swallowed, or never waited for")
    ) {
      try await withDeadline(
        .seconds(2), "send(_:) after disconnect()",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await connection.send("anyone?")
      }
    }
  }

  @Test("A line of exactly 1024 bytes is sent; one of 1025 bytes throws .invalidLine")
  func lengthLimit() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let connection = ChatConnection()
    defer { connection.disconnect() }
    try await legacyConnect(connection, port: server.port, name: "alice")
    let longest = String(repeating: "x", count: ChatServer.maximumLineLength)
    let longestAccented = String(repeating: "é", count: ChatServer.maximumLineLength / 2)

    for (line, what) in [(longest, "1024 ASCII bytes"), (longestAccented, "512 \"é\", 1024 bytes")]
    {
      let outcome = await Result {
        try await withDeadline(
          .seconds(2), "send(_:) with a line of \(what)",
          hint: "the completion's success path (error == nil) never resumes the continuation"
        ) {
          try await connection.send(line)
        }
      }
      if case .failure(let error as DeadlineExceeded) = outcome { throw error }
      #expect(
        outcome.failure == nil,
        "a line of \(what) is as long as a line may be, and valid: send(_:) must send it, but it \(outcome.described)"
      )
    }
    await eventually("bob to receive alice's two longest lines") {
      bob.recorder.lines.value.contains("alice: " + longest)
        && bob.recorder.lines.value.contains("alice: " + longestAccented)
    }

    let outcome = await Result {
      try await withDeadline(
        .seconds(2), "send(_:) with a line of 1025 bytes",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await connection.send(longest + "x")
      }
    }
    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    #expect(
      (outcome.failure as? ChatConnectionError) == .invalidLine,
      "a line of 1025 bytes is one byte too long: send(_:) must throw the connection's own error, .invalidLine, but it \(outcome.described)"
    )
  }

  @Test("A send in a cancelled task leaves the connection open for the next line")
  func cancelledSend() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let connection = ChatConnection()
    defer { connection.disconnect() }
    try await legacyConnect(connection, port: server.port, name: "alice")

    let sending = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      try await connection.send("from a cancelled task")
    }
    try await expectChatGoesOn(
      after: sending, on: connection, server: server, heardBy: bob,
      cancelled: "in a task that was cancelled",
      gone: { cancelled, next in
        "after a send in a cancelled task, the connection was gone (the cancelled send \(cancelled), the next one \(next)): the connection belongs to whoever made it, and one cancelled line must not end the chat for everyone else using it"
      }
    )
  }

  @Test("A line that cannot be sent, from a cancelled task, still does not look sent")
  func cancelledInvalidLineThrows() async throws {
    let server = try startedServer()
    defer { server.stop() }
    // The refusal is held until the send has had a second to end without it: a send that
    // stops waiting when its task is cancelled, and returns, is seen every run, whether
    // the completion would have come before its wait began or after.
    let (held, connection) = try await joinedWithHeldCallbacks(server)
    defer { connection.disconnect() }
    held.holdAgain()

    let ended = Locked(false)
    let sending = Task {
      defer { ended.withLock { $0 = true } }
      withUnsafeCurrentTask { $0?.cancel() }
      try await connection.send("two\nlines")
    }
    // A send may also throw CancellationError at once, without handing the line over.
    _ = await eventually(within: .seconds(1)) { ended.value }
    await held.release()
    let outcome = try await withDeadline(
      .seconds(2), "send(_:) of an invalid line in a cancelled task",
      hint: "the completion's paths must resume the continuation, cancelled or not"
    ) {
      await sending.result
    }
    switch outcome {
    case .success:
      Issue.record(
        "send(\"two\\nlines\") in a cancelled task returned as if the line had gone out; the connection refused it (.invalidLine): a send that returns says its line is on its way, so a cancelled one must throw, CancellationError or the connection's error, unless its line really went"
      )
    case .failure(let error):
      #expect(
        error is CancellationError || (error as? ChatConnectionError) == .invalidLine,
        "a refused line's send in a cancelled task may throw CancellationError or .invalidLine, not \(error)"
      )
    }
  }

  @Test(
    "A send whose task is cancelled while it waits for its completion leaves the connection open")
  func cancelledWhileSending() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    // The send's completion is held until the test lets it go: the cancel lands while the
    // send waits for it, every run.
    let (held, connection) = try await joinedWithHeldCallbacks(server)
    defer { connection.disconnect() }
    held.holdAgain()

    let sending = Task { try await connection.send("mid-flight") }
    let waiting = await eventually { held.heldCount >= 1 }
    try #require(waiting, "the test's connection never completed the send")
    sending.cancel()
    // Whatever the cancel set off gets the time to happen before the completion comes.
    try await Task.sleep(for: .milliseconds(100))
    await held.release()
    try await expectChatGoesOn(
      after: sending, on: connection, server: server, heardBy: bob,
      cancelled: "whose task was cancelled while it waited",
      gone: { cancelled, next in
        "the task of a send was cancelled while the send waited for its completion, and the connection was gone (the cancelled send \(cancelled), the next one \(next)): the line was already handed over, and the connection carries other lines both ways; cancelling one send must not end the chat (no disconnect() on cancel)"
      }
    )
  }

  @Test("A send cancelled at the very moment its completion comes answers once, round after round")
  func cancelledAsTheCompletionComes() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let (held, connection) = try await joinedWithHeldCallbacks(server)
    defer { connection.disconnect() }

    // Each round, the send's completion is held, then run on a thread of the test's while
    // the send's task is cancelled from another, a tuned moment apart (see RaceAimer): the
    // moment moves toward the point where the outcome flips, from the cancel winning to the
    // completion winning. Whichever wins, the send ends once, with its outcome or
    // CancellationError. A box that both resume unguarded fails in the first round; a
    // "done?" flag looked at and set in two steps lets both in only when they meet within a
    // few nanoseconds, which about one run in six sees (the table says so).
    let aimer = RaceAimer()
    defer { aimer.stop() }
    let completer = OneThreadExecutor()
    var round = 0
    try await raceRounds { _, _ in
      round += 1
      let round = round
      held.holdAgain()
      let sending = Task { try await connection.send("round \(round)") }
      // Looked at without sleeping between looks: the line is handed over within
      // microseconds, and a round must not cost more.
      let giveUp = ContinuousClock.now + .seconds(2)
      while held.heldCount == 0 && ContinuousClock.now < giveUp { await Task.yield() }
      guard held.heldCount >= 1 else {
        sending.cancel()
        Issue.record("send(_:) never handed its line to the connection")
        return false
      }
      let completions = held.takeHeld()
      Task(executorPreference: completer) {
        aimer.anchor { sending.cancel() }
        for completion in completions { completion() }
      }
      let outcome = try await withDeadline(
        .seconds(2), "send(_:) cancelled as its completion came (round \(round))",
        hint: "the cancel and the completion came at the same moment, and neither resumed "
          + "the send: each decided from a flag the other had not set yet, or from one it had "
          + "set but not yet acted on"
      ) {
        await sending.result
      }
      switch outcome {
      case .success: aimer.learn(actionCameFirst: false)
      case .failure(let error) where error is CancellationError:
        aimer.learn(actionCameFirst: true)
      case .failure(let error):
        Issue.record(
          Comment(
            rawValue: "a valid line's send, cancelled as its completion came, threw \(error): "
              + "it may go out or throw CancellationError (round \(round))"))
        return false
      }
      return true
    }
    withExtendedLifetime(bob) {}
  }

  // After the cancellation tests: an answer that maps the legacy .cancelled to
  // CancellationError often hangs up on cancel too, the worse fault, which they name.
  @Test(
    "A line still waiting to go out when disconnect() comes throws .cancelled, and does not look sent"
  )
  func cutOffByDisconnect() async throws {
    // A server that welcomes alice and then reads nothing: her lines pile up.
    let listener = try SilentListener(receiveBuffer: 4_096)
    let connection = ChatConnection()
    let joining = Task { try await legacyConnect(connection, port: listener.port, name: "alice") }
    await eventually("the connection to reach the listener") { listener.say("* welcome alice\n") }
    try await withDeadline(.seconds(2), "the legacy connect") { try await joining.value }
    // 16 MiB ahead of the line, far more than the kernel holds for a reader that never
    // reads: that line cannot go out before the hang-up.
    let filler = String(repeating: "x", count: ChatServer.maximumLineLength)
    for _ in 0..<16_384 { connection.send(filler, completion: nil) }
    // (The fake's own pace: slow under Thread Sanitizer on a busy machine, never the answer's.)
    await eventually("the connection to take the 16 MiB ahead", within: .seconds(30)) {
      connection.linesTakenForSending == 16_384
    }
    let sending = Task { try await connection.send("last words") }
    await eventually("send(\"last words\") to hand its line to the connection") {
      connection.linesTakenForSending > 16_384
    }
    connection.disconnect()

    let outcome = try await withDeadline(
      .seconds(2), "send(\"last words\"), cut off by disconnect()",
      hint: "the completion's error path never resumes the continuation"
    ) { await sending.result }
    guard let error = outcome.failure else {
      Issue.record(
        "send(\"last words\") returned as if the line had gone out, but disconnect() came while it was still waiting its turn: the completion reported ChatConnectionError.cancelled, and that error was dropped. A line that was never sent must throw, whoever hung up"
      )
      return
    }
    // The sending task was never cancelled: someone else hung up. CancellationError would
    // tell the caller its own task was stopped, which did not happen.
    #expect(
      (error as? ChatConnectionError) == .cancelled,
      "send(\"last words\") was cut off by disconnect(), in a task nobody cancelled, and threw \(error): the completion reported ChatConnectionError.cancelled, the connection's own error, and that is what the caller must see. CancellationError says the caller's task was cancelled, which it was not: every error the completion reports reaches the caller unchanged"
    )
  }

  /// Alice, joined through the legacy connect on a connection whose callbacks the test
  /// holds (from now on they run as they come, until the test holds them again).
  private func joinedWithHeldCallbacks(
    _ server: ChatServer
  ) async throws -> (HeldCallbacks, ChatConnection) {
    let held = HeldCallbacks()
    let connection = ChatConnection(callbacksVia: held.schedule)
    let connecting = Task { try await legacyConnect(connection, port: server.port, name: "alice") }
    _ = await eventually { held.heldCount >= 1 }
    await held.release()
    try await connecting.value
    return (held, connection)
  }

  /// The contract after a cancelled send: the send returns or throws `CancellationError`,
  /// and the connection still carries the next line to the other members. `gone` is the
  /// verdict when it does not, given the cancelled send's and the next send's outcome.
  private func expectChatGoesOn(
    after sending: Task<Void, any Error>, on connection: ChatConnection, server: ChatServer,
    heardBy bob: Member, cancelled situation: String,
    gone: (_ cancelled: String, _ next: String) -> String
  ) async throws {
    let outcome = await Result {
      try await withDeadline(
        .seconds(2), "send(_:) \(situation)",
        hint: "the completion's paths must resume the continuation, cancelled or not"
      ) {
        try await sending.value
      }
    }
    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    await callbacksDelivered(connection)
    let stillThere = await Result {
      try await withDeadline(
        .seconds(2), "send(\"still here\") after a send \(situation)",
        hint: "the completion's paths must resume the continuation"
      ) {
        try await connection.send("still here")
      }
    }
    if case .failure(let error as DeadlineExceeded) = stillThere { throw error }
    #expect(
      stillThere.failure == nil && server.names.contains("alice"),
      "\(gone(outcome.described, stillThere.described))")
    #expect(
      outcome.failure == nil || outcome.failure is CancellationError,
      "a send \(situation) may go out or throw CancellationError, but it \(outcome.described)"
    )
    await eventually("bob to receive the line sent after the cancelled one") {
      bob.recorder.lines.value.contains("alice: still here")
    }
  }

  @Test("send(_:) waits for a slow completion without holding a thread, in any task")
  func slowCompletion() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    // From the send on, each completion comes 2.5 s late: a wait that holds a thread of
    // the concurrency pool for that long, in this task or one it starts, is noticed.
    let slow = SlowCallbacks()
    let connection = ChatConnection(callbacksVia: slow.schedule)
    defer { connection.disconnect() }
    try await legacyConnect(connection, port: server.port, name: "alice")
    slow.delay.withLock { $0 = slowAnswer }

    try await withDeadline(
      .seconds(6), "send(\"slow\") with a completion that comes 2.5 seconds late",
      hint: "the completion's success path (error == nil) never resumes the continuation"
    ) {
      try await connection.send("slow")
    }
    await eventually("bob to receive alice's line") {
      bob.recorder.lines.value.contains("alice: slow")
    }
  }

  @Test("200 sends in a row arrive complete and in order")
  func manySendsInOrder() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let connection = ChatConnection()
    defer { connection.disconnect() }
    try await legacyConnect(connection, port: server.port, name: "alice")
    let lines = (1...200).map { "line \($0)" }

    try await withDeadline(
      .seconds(5), "200 calls of send(_:), one after another",
      hint: "the completion's success path (error == nil) never resumes the continuation"
    ) {
      for line in lines { try await connection.send(line) }
    }
    let expected = lines.map { "alice: " + $0 }
    let complete = await eventually {
      bob.recorder.lines.value.filter { $0.hasPrefix("alice: ") }.count >= expected.count
    }
    let received = bob.recorder.lines.value.filter { $0.hasPrefix("alice: ") }
    #expect(
      complete && received == expected,
      "alice sent 200 lines, each once the one before had returned; bob received \(received.count), \(received == Array(expected.prefix(received.count)) ? "in order" : "out of order"): a send that has returned must have its line on its way, ahead of the next one"
    )
  }

  @Test("Sends from many tasks at once each return once their own line is on its way")
  func concurrentSends() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let connection = ChatConnection()
    defer { connection.disconnect() }
    try await legacyConnect(connection, port: server.port, name: "alice")
    let lines = (1...20).map { "from task \($0)" }

    try await withDeadline(
      .seconds(5), "20 calls of send(_:) at once",
      hint: "each call must resume its own continuation, once"
    ) {
      try await withThrowingTaskGroup(of: Void.self) { group in
        for line in lines { group.addTask { try await connection.send(line) } }
        try await group.waitForAll()
      }
    }
    let expected = Set(lines.map { "alice: " + $0 })
    let complete = await eventually {
      expected.isSubset(of: bob.recorder.lines.value)
    }
    #expect(
      complete,
      "20 tasks sent a line each, at once, and every call returned, but bob received only \(expected.intersection(bob.recorder.lines.value).count): each call must wait for its own line"
    )
  }
}
