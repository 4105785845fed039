import ChatKit
import Foundation
import Testing
import WorkbookTesting

@testable import Capstone

private let policy = ReconnectPolicy(attempts: 3, firstDelay: .seconds(1))

private let reconnectHint =
  "when the server goes away, do not end the command: wait policy.firstDelay with "
  + "try await Task.sleep(for: delay, clock: clock), on the clock it was given, then connect "
  + "again"

/// A reconnecting chat run in a task, with its input, what it printed, and how it ended.
private struct Chat {
  let name: String
  let input: AsyncStream<String>.Continuation
  let printed = Locked<[String]>([])
  /// True once `runReconnectingChat` has returned or thrown.
  let ended = Locked(false)
  /// True once the input stream was terminated: finished by the test, or cancelled because
  /// the task reading it was.
  let inputTerminated = Locked(false)
  let run: Task<Void, any Error>
  let clock = ManualClock()

  init(_ name: String, port: UInt16) {
    let (lines, input) = AsyncStream.makeStream(of: String.self)
    self.name = name
    self.input = input
    let (printed, ended, inputTerminated, clock) = (printed, ended, inputTerminated, clock)
    input.onTermination = { _ in inputTerminated.withLock { $0 = true } }
    run = Task {
      defer { ended.withLock { $0 = true } }
      try await runReconnectingChat(
        name: name, input: lines, output: { line in printed.withLock { $0.append(line) } },
        port: port, policy: policy, clock: clock)
    }
  }

  /// Waits until the chat has joined `server`; stops the test if it never does.
  func joins(_ server: ChatServer, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    _ = await eventually { server.names.contains(name) || ended.value }
    try #require(
      server.names.contains(name),
      "runReconnectingChat(…) never joined the chat as \(name) (it ended first: \(ended.value))",
      sourceLocation: sourceLocation)
  }

  /// Returns once the chat is asleep on its clock, waiting to reconnect.
  func waitsToReconnect(
    _ what: String, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    try await withDeadline(
      .seconds(2), "runReconnectingChat(…) \(what)", hint: reconnectHint,
      sourceLocation: sourceLocation
    ) { [clock] in await clock.sleeping() }
  }

  /// Waits for the command to end.
  func end(
    _ what: String, hint: String, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    try await withDeadline(.seconds(3), what, hint: hint, sourceLocation: sourceLocation) {
      [run] in
      try await run.value
    }
  }
}

/// A server on `port` again, once the port is free.
private func restartedServer(on port: UInt16, greeting: [String] = []) async throws -> ChatServer {
  let server = ChatServer(port: port, greeting: greeting)
  let started = await eventually { (try? server.start()) != nil }
  try #require(started, "the test could not start a server on port \(port) again")
  return server
}

@Suite("8.6 Challenge: reconnect after the server goes away")
struct ReconnectTests {
  @Test("Chats as clipper does: prints what others say, sends what is typed, returns at the end")
  func chats() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let alice = Chat("alice", port: server.port)
    defer { alice.run.cancel() }
    try await alice.joins(server)

    try await bob.say("hi alice")
    let printed = await eventually { alice.printed.value.contains("bob: hi alice") }
    #expect(printed, "runReconnectingChat(…) never printed bob's line \"bob: hi alice\"")
    alice.input.yield("hi bob")
    alice.input.yield("bye")
    alice.input.finish()

    try await alice.end(
      "runReconnectingChat(…) after its input ended",
      hint: "at the end of the input, stop the other side (cancel the task group's children), "
        + "hang up, and return")
    await eventually("bob to receive alice's lines, then her leaving") {
      bob.recorder.lines.value.suffix(3) == ["alice: hi bob", "alice: bye", "* alice left"]
    }
  }

  @Test("A first connect that fails ends the command at once, with its error")
  func firstConnectFails() async throws {
    let alice = Chat("alice", port: try closedPort())
    defer { alice.run.cancel() }

    await #expect(
      throws: ChatConnectionError.self,
      "a failed first connect must end the command with the connect's error: no chat to go back to"
    ) {
      try await alice.end(
        "runReconnectingChat(…) whose first connect is refused",
        hint: "a failed first connect must end the command at once, with its error")
    }
    #expect(alice.clock.requestedSleeps.isEmpty, "a failed first connect must not be retried")
  }

  @Test("When the server goes away it waits, reconnects, and the chat goes on")
  func reconnects() async throws {
    let server = try startedServer()
    let port = server.port
    let alice = Chat("alice", port: port)
    defer {
      alice.run.cancel()
      server.stop()
    }
    try await alice.joins(server)
    // Stop the server only once alice listens (she prints bob's arrival).
    let bob = try await join(server, as: "bob")
    let listening = await eventually { alice.printed.value.contains("* bob joined") }
    try #require(listening, "runReconnectingChat(…) never printed \"* bob joined\"")

    withExtendedLifetime(bob) { server.stop() }
    try await alice.waitsToReconnect("after the server went away")
    let lost = await eventually { alice.printed.value.contains("* connection lost") }
    #expect(lost, "when the server goes away, print \"* connection lost\"")
    #expect(
      alice.clock.requestedSleeps == [policy.firstDelay],
      "the first wait after a loss must be policy.firstDelay (1 second), not \(alice.clock.requestedSleeps)"
    )
    alice.input.yield("anyone there?")
    let reported = await eventually { alice.printed.value.contains("! not sent: anyone there?") }
    #expect(
      reported,
      "a line typed while the server is away must be reported as \"! not sent: anyone there?\"")

    // The first try finds nobody listening; the second one finds the server back.
    alice.clock.advance(by: policy.firstDelay)
    try await alice.waitsToReconnect("after its first try failed")
    #expect(
      alice.clock.requestedSleeps == [policy.firstDelay, policy.firstDelay * 2],
      """
      the waits were \(alice.clock.requestedSleeps), not 1 then 2 seconds: wait \
      policy.firstDelay first, then double the delay after each failed try
      """)
    let second = try await restartedServer(on: port, greeting: ["* welcome back"])
    defer { second.stop() }
    alice.clock.advance(by: policy.firstDelay * 2)
    _ = await eventually { second.names.contains("alice") || alice.ended.value }
    try #require(
      second.names.contains("alice"),
      "runReconnectingChat(…) did not join the restarted server after its wait (ended: \(alice.ended.value))"
    )
    let greeted = await eventually { alice.printed.value.contains("* welcome back") }
    #expect(
      greeted,
      """
      the line the restarted server sent with its welcome was lost: store or subscribe \
      before you start, on every reconnection (a new connection's incomingLines() before \
      its connect); printed: \(alice.printed.value)
      """)
    #expect(
      alice.printed.value.contains("* reconnected"), "once connected again, print \"* reconnected\""
    )
    let carol = try await join(second, as: "carol")
    let heardCarol = await eventually { alice.printed.value.contains("* carol joined") }
    #expect(heardCarol, "after reconnecting, print what the server sends (\"* carol joined\")")

    alice.input.yield("back again")
    let delivered = await eventually { carol.recorder.lines.value.contains("alice: back again") }
    #expect(
      delivered,
      """
      a line typed after reconnecting never reached the others: the input side must go on \
      across connections (report a line it cannot send with "! not sent: …", and go on; \
      send on the new connection)
      """)

    // A second loss: the wait starts again from the first delay.
    withExtendedLifetime(carol) { second.stop() }
    try await alice.waitsToReconnect("after the server went away a second time")
    #expect(
      alice.clock.requestedSleeps == [policy.firstDelay, policy.firstDelay * 2, policy.firstDelay],
      """
      after a successful reconnection, the next loss must start again from \
      policy.firstDelay: the waits were \(alice.clock.requestedSleeps)
      """)

    alice.input.finish()
    try await alice.end(
      "runReconnectingChat(…) whose input ended while it waited to reconnect",
      hint: "at the end of the input, cancel the side that reconnects (its wait on the clock "
        + "throws CancellationError), and return")
  }

  @Test("Waits twice as long after each failed try, then gives up with ReconnectError.gaveUp")
  func givesUp() async throws {
    let server = try startedServer()
    let alice = Chat("alice", port: server.port)
    defer {
      alice.run.cancel()
      server.stop()
    }
    try await alice.joins(server)
    server.stop()

    for (attempt, seconds) in [1, 2, 4].enumerated() {
      try await alice.waitsToReconnect("before try \(attempt + 1) (nothing listens)")
      let asked = alice.clock.requestedSleeps.last
      #expect(
        asked == .seconds(seconds),
        """
        the wait before try \(attempt + 1) was \(asked.map { "\($0)" } ?? "none"), not \
        \(seconds) s: wait policy.firstDelay first, then double the delay after each failed try
        """)
      alice.clock.advance(by: .seconds(seconds))
    }

    await #expect(throws: ReconnectError.gaveUp) {
      try await alice.end(
        "runReconnectingChat(…) after \(policy.attempts) failed tries",
        hint: "give up after policy.attempts failed tries: throw ReconnectError.gaveUp")
    }
    #expect(
      alice.inputTerminated.value,
      """
      the command gave up, but the task reading its input was still running: run both sides \
      as children of a task group, so that the end of one cancels the other
      """)
  }

  @Test("Cancelling it hangs up and ends it, whether connected or waiting to reconnect")
  func cancelling() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connected = Chat("alice", port: server.port)
    defer { connected.run.cancel() }
    try await connected.joins(server)

    connected.run.cancel()
    try? await connected.end(
      "a cancelled runReconnectingChat(…)",
      hint: "cancelling the command must end both of its sides")
    let hungUp = await eventually { !server.names.contains("alice") }
    #expect(hungUp, "a cancelled runReconnectingChat(…) must hang up")
    #expect(
      connected.inputTerminated.value,
      "after a cancelled runReconnectingChat(…) ended, the task reading its input still ran")

    let other = try startedServer()
    let waiting = Chat("ada", port: other.port)
    defer { waiting.run.cancel() }
    try await waiting.joins(other)
    other.stop()
    try await waiting.waitsToReconnect("after the server went away")
    waiting.run.cancel()
    try? await waiting.end(
      "runReconnectingChat(…) cancelled while it waited to reconnect",
      hint: "keep the try on the wait: Task.sleep throws CancellationError when cancelled")
    #expect(
      waiting.inputTerminated.value,
      "after a cancelled runReconnectingChat(…) ended, the task reading its input still ran")
  }
}
