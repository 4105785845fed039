import Dispatch
import Foundation
import Testing
import WorkbookTesting

@testable import Capstone
@testable import ChatKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
  /// The lines whose `output` call was still running, or started, once
  /// `runReconnectingChat` had returned.
  let printedLate = Locked<[String]>([])
  let run: Task<Void, any Error>
  let clock = ManualClock()

  /// Runs on `executor` if one is given. `whilePrinting` runs inside each `output` call,
  /// before the line is recorded: a slow terminal, say. `typedFirst` is in the input before
  /// the command is called, and `inputEndedFirst` ends the input then too.
  init(
    _ name: String, port: UInt16, on executor: OneThreadExecutor? = nil,
    policy: ReconnectPolicy = policy, typedFirst: [String] = [], inputEndedFirst: Bool = false,
    whilePrinting: @escaping @Sendable (String) -> Void = { _ in }
  ) {
    let (lines, input) = AsyncStream.makeStream(of: String.self)
    self.name = name
    self.input = input
    let (printed, printedLate, ended, inputTerminated, clock) = (
      printed, printedLate, ended, inputTerminated, clock
    )
    input.onTermination = { _ in inputTerminated.withLock { $0 = true } }
    for line in typedFirst { input.yield(line) }
    if inputEndedFirst { input.finish() }
    let printing = Locked<[String]>([])
    run = Task(executorPreference: executor) {
      defer {
        // Whatever is still being printed now is printed after the command returned.
        let unfinished = printing.withLock { printing in
          ended.withLock { $0 = true }
          return printing
        }
        printedLate.withLock { $0 += unfinished }
      }
      try await runReconnectingChat(
        name: name, input: lines,
        output: { line in
          let late = printing.withLock { printing in
            printing.append(line)
            return ended.value
          }
          if late { printedLate.withLock { $0.append(line) } }
          whilePrinting(line)
          printed.withLock { $0.append(line) }
          printing.withLock { printing in
            if let index = printing.firstIndex(of: line) { printing.remove(at: index) }
          }
        },
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

  /// Returns true once the chat is asleep on its clock again after `tries` failed tries;
  /// records a failure and returns false if the chat ended instead, having given up early.
  func waitsToTryAgain(
    after tries: Int, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Bool {
    try await withDeadline(
      .seconds(2), "runReconnectingChat(…) after try \(tries) failed", hint: reconnectHint,
      sourceLocation: sourceLocation
    ) { [clock, ended] in
      while clock.sleeperCount == 0 && !ended.value { try await Task.sleep(for: .milliseconds(2)) }
    }
    guard clock.sleeperCount == 0 else { return true }
    let outcome = await run.result.mapError { $0 as any Error }
    Issue.record(
      Comment(
        rawValue: "runReconnectingChat(…) \(outcome.described) after only \(tries) wait(s) on "
          + "the clock, where policy.attempts is \(policy.attempts): each try the policy allows "
          + "comes after a wait of its own, the first one after policy.firstDelay, so the "
          + "command gives up only once its last try, after the last wait, has failed (a try "
          + "made without waiting first, or one try too few, ends it early)"),
      sourceLocation: sourceLocation)
    return false
  }

  /// Lets each wait in `seconds` pass in turn, once the chat sleeps for it, and checks that
  /// each wait is the one expected; `wrongWait(try, asked, expected)` says what went wrong.
  /// Returns false if the chat ended early (already recorded by `waitsToTryAgain`).
  func waitsDouble(
    _ seconds: [Int], wrongWait: (Int, Duration?, Int) -> String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Bool {
    for (attempt, expected) in seconds.enumerated() {
      if attempt == 0 {
        try await waitsToReconnect(
          "before try 1 (nothing listens)", sourceLocation: sourceLocation)
      } else {
        guard try await waitsToTryAgain(after: attempt, sourceLocation: sourceLocation) else {
          return false
        }
      }
      let asked = clock.requestedSleeps.last
      #expect(
        asked == .seconds(expected),
        Comment(rawValue: wrongWait(attempt + 1, asked, expected)),
        sourceLocation: sourceLocation)
      clock.advance(by: .seconds(expected))
    }
    return true
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

  /// Waits for a command that should have given up to end. `hint` is the likely cause while
  /// it still waits on the clock to try again; once nothing waits any more, the tries are
  /// over and the likely cause is a gaveUp that never reached the command.
  func endsGivingUp(
    _ what: String, hint: String, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    try await withDeadline(
      .seconds(3), what,
      likelyCause: { [clock] in
        clock.sleeperCount > 0
          ? hint
          : "after the last failed try nothing waited on the clock to try again, and "
            + "runReconnectingChat(…) still had not ended: if it gave up there, the error "
            + "did not reach the command. Is ReconnectError.gaveUp thrown in a task the "
            + "command does not wait on while it reads its input, such as a Task {} awaited "
            + "only after the input ends?"
      },
      sourceLocation: sourceLocation
    ) {
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

/// A listener on `port` that takes every connection and closes it at once, counting them:
/// each connect to it fails (the server closed before its welcome), as tries do while a
/// server restarts.
private final class RefusingListener {
  private let source: any DispatchSourceRead
  private let count = Locked(0)

  /// How many connections it has refused.
  var refused: Int { count.value }

  init(port: UInt16) throws {
    let listener = try SilentListener(port: port)
    let source = DispatchSource.makeReadSource(
      fileDescriptor: listener.fd, queue: DispatchQueue(label: "RefusingListener"))
    source.setEventHandler { [count] in
      while true {
        let peer = accept(listener.fd, nil, nil)
        guard peer >= 0 else { return }
        // Counted before the close: the client that sees the close may give up at once,
        // and the test reads the count as soon as it has.
        count.withLock { $0 += 1 }
        close(peer)
      }
    }
    source.setCancelHandler { withExtendedLifetime(listener) {} }
    source.resume()
    self.source = source
  }

  deinit { source.cancel() }
}

/// A refusing listener on `port` again, once the port is free.
private func refusingListener(on port: UInt16) async throws -> RefusingListener {
  var listener: RefusingListener?
  let started = await eventually {
    listener = try? RefusingListener(port: port)
    return listener != nil
  }
  try #require(started, "the test could not listen on port \(port) again")
  return listener!
}

/// The contract of `runReconnectingChat(…)`: each path, what the command, the others and
/// the clock see, and the test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | resources: connections, tasks, input | output, waits on the clock |
/// | --- | --- | --- | --- |
/// | joined, lines both ways | — | — | prints what arrives, sends what is typed: `chats`; in order, before it returns, with a slow `output`: `printsInOrderAndInTime` |
/// | end of input | returns: `chats` | hangs up after the last line: `chats` | no "* connection lost": `chats` |
/// | a line too long, while connected | goes on: `chats` | — | "! not sent: LINE", once: `chats` |
/// | end of input while away | returns: `reconnects` | the reconnecting side stops, its wait on the clock ended: `reconnects` | — |
/// | first connect fails | its error, at once: `firstConnectFails` | — | no wait: `firstConnectFails` |
/// | the server goes away | goes on: `reconnects` | — | "* connection lost", waits 1 s, then 2 s after a failed try: `reconnects`; tries only after each wait: `triesAfterEachWait` |
/// | the server closes on it but stays up, or resets it | goes on: `waitsEvenIfTheServerIsBack` | back in the chat after the wait: `waitsEvenIfTheServerIsBack` | the first try only after `firstDelay`, for every loss: `waitsEvenIfTheServerIsBack` |
/// | back after a wait | goes on | the new connection's greeting kept, lines both ways: `reconnects` | "* reconnected": `reconnects`; the next loss starts from `firstDelay`, with `policy.attempts` tries of its own: `reconnects`, `waitsEvenIfTheServerIsBack` |
/// | typed while away | — | — | "! not sent: LINE": `reconnects` |
/// | a policy of long waits (20 s first) | — | — | waits 20, 40, 80 s: each one double the last, however long: `longWaitsKeepDoubling` |
/// | a policy of no tries (`attempts: 0`) | `ReconnectError.gaveUp` at the first loss: `noTriesGivesUpAtOnce` | — | no wait, no try: `noTriesGivesUpAtOnce` |
/// | every try fails | `ReconnectError.gaveUp`: `givesUp` | the input side stops: `givesUp` | waits 1, 2, 4 s: `givesUp`; exactly `policy.attempts` tries, each after its wait: `triesAfterEachWait` |
/// | cancelled while connected | ends: `cancelling` | hangs up, the input side stops: `cancelling` | — |
/// | cancelled while waiting | ends: `cancelling` | the input side stops: `cancelling` | — |
/// | cancelled while a try waits for its welcome | ends: `cancelledWhileTrying` | the try's socket hangs up, the input side stops: `cancelledWhileTrying` | — |
/// | waits | — | — | on the clock it is given, never real time: `reconnects` (a `ManualClock`); never a blocked thread: `withDeadline` in every test |
/// | lines typed together, the first slow on its way into the connection | — | — | the others receive them in the order typed: `sendsInTheOrderTyped` (ChatConnection holds the first line until the next send, so sends from several tasks at once overtake it every run) |
/// | lines typed, and the input ended, before the call | returns once they are sent: `sendsWhatWasTypedBeforeJoining` | joins first, sends them, then hangs up: `sendsWhatWasTypedBeforeJoining` | no "! not sent": `sendsWhatWasTypedBeforeJoining` |
/// | first connect fails, the input already ended | its error: `sendsWhatWasTypedBeforeJoining` | — | — |
/// | each send waits for its completion on a semaphore, holding a thread of the pool | — not caught: the legacy send completes as soon as the line is written, so the thread is held too briefly for the pool check to see | | |
/// | "* reconnected" printed before the input side has the new connection | — not caught: a line typed in the microseconds between the two is reported "! not sent"; no test can type into that gap | | |
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
    alice.input.yield(String(repeating: "x", count: ChatServer.maximumLineLength + 1))
    alice.input.yield("bye")
    alice.input.finish()

    let ended = await Result {
      try await alice.end(
        "runReconnectingChat(…) after its input ended",
        hint: "at the end of the input, stop the other side (cancel the task group's children), "
          + "hang up, and return")
    }
    if case .failure(let error as ChatConnectionError) = ended {
      Issue.record(
        "runReconnectingChat(…) threw \(error) while connected: a line the connection refused (one too long) ended the whole chat; a line that cannot be sent is reported as \"! not sent: LINE\", and the chat goes on"
      )
      return
    }
    try ended.get()
    await eventually("bob to receive alice's lines, then her leaving") {
      bob.recorder.lines.value.suffix(3) == ["alice: hi bob", "alice: bye", "* alice left"]
    }
    let notSent = alice.printed.value.filter { $0.hasPrefix("! not sent: xxx") }
    #expect(
      notSent.count == 1,
      """
      a line too long to send was reported \(notSent.count) times: a line that cannot be sent, \
      for want of a connection or because the connection refuses it, is reported once as \
      "! not sent: LINE", and the chat goes on
      """)
    let lost = alice.printed.value.filter { $0 == "* connection lost" }
    #expect(
      lost.isEmpty,
      """
      printed "* connection lost" after the input ended: hanging up at the end is no loss; \
      a loop over the incoming lines that ends without an error (we hung up, or the task was \
      cancelled) must end the command's server side, not start reconnecting
      """)
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
    // And with the policy's tries of its own: its first try fails too, and the chat waits
    // again, although the first loss used two tries.
    alice.clock.advance(by: policy.firstDelay)
    _ = await eventually { alice.clock.sleeperCount > 0 || alice.ended.value }
    guard !alice.ended.value else {
      let outcome = await alice.run.result.mapError { $0 as any Error }
      Issue.record(
        Comment(
          rawValue: "after a second loss, runReconnectingChat(…) \(outcome.described) once its "
            + "first try failed, where policy.attempts is \(policy.attempts): every loss has "
            + "the policy's tries of its own; a count kept across losses gives up on the tries "
            + "an earlier loss used"))
      return
    }

    alice.input.finish()
    try await alice.end(
      "runReconnectingChat(…) whose input ended while it waited to reconnect",
      hint: "at the end of the input, cancel the side that reconnects (its wait on the clock "
        + "throws CancellationError), and return")
    #expect(
      await eventually { alice.clock.sleeperCount == 0 },
      """
      runReconnectingChat(…) returned at the end of its input, and its wait to reconnect \
      was still asleep on the clock: the reconnecting side outlived the command, and would \
      connect again with nobody there
      """)
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

    let waited = try await alice.waitsDouble([1, 2, 4]) { attempt, asked, seconds in
      """
      the wait before try \(attempt) was \(asked.map { "\($0)" } ?? "none"), not \
      \(seconds) s: wait policy.firstDelay first, then double the delay after each failed try
      """
    }
    guard waited else { return }

    await #expect(throws: ReconnectError.gaveUp) {
      try await alice.endsGivingUp(
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
    let waitsBefore = waiting.clock.requestedSleeps
    waiting.run.cancel()
    let ended = await Result {
      try await waiting.end(
        "runReconnectingChat(…) cancelled while it waited to reconnect",
        hint: "keep the try on the wait: Task.sleep throws CancellationError when cancelled")
    }
    if case .failure(let error as ReconnectError) = ended, error == .gaveUp {
      Issue.record(
        "runReconnectingChat(…), cancelled while it waited to reconnect, threw gaveUp: the cancel ended its wait, and that was counted as a failed try, again and again, until the tries ran out; a cancelled command ends (or throws CancellationError), it has not given up"
      )
    }
    let laterWaits = waiting.clock.requestedSleeps.dropFirst(waitsBefore.count)
    #expect(
      laterWaits.isEmpty,
      "runReconnectingChat(…), cancelled while it waited to reconnect, then asked the clock for \(laterWaits.count) more wait(s), \(Array(laterWaits)): the cancel that ended its wait was counted as a failed try, and the next try's wait followed; a cancelled wait ends the reconnecting, it is no failed try"
    )
    #expect(
      waiting.inputTerminated.value,
      "after a cancelled runReconnectingChat(…) ended, the task reading its input still ran")
  }

  @Test(
    "Waits policy.firstDelay before its first try after each loss, even when the server is back at once"
  )
  func waitsEvenIfTheServerIsBack() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let alice = Chat("alice", port: server.port)
    defer { alice.run.cancel() }
    try await alice.joins(server)
    let bob = try await join(server, as: "bob")
    let listening = await eventually { alice.printed.value.contains("* bob joined") }
    try #require(listening, "runReconnectingChat(…) never printed \"* bob joined\"")

    // The server closes alice's connection, and goes on listening; then it resets it.
    for (loss, reset) in [("closed", false), ("reset", true)] {
      let sleepsBefore = alice.clock.requestedSleeps.count
      withExtendedLifetime(bob) { _ = server.disconnect("alice", reset: reset) }
      let left = await eventually { !server.names.contains("alice") }
      try #require(left, "the test's server did not let alice go")
      _ = await eventually {
        alice.clock.sleeperCount > 0 || server.names.contains("alice") || alice.ended.value
      }
      try #require(
        !alice.ended.value,
        "when the server \(loss) the connection, runReconnectingChat(…) ended: a lost connection, however it was lost, is one to get back to"
      )
      try #require(
        !server.names.contains("alice") || alice.clock.requestedSleeps.count > sleepsBefore,
        "after the server \(loss) the connection, alice was back in the chat without waiting on the clock: the first try after a loss comes only after policy.firstDelay, even when the server is back at once (a server that just went away is often still restarting, and clients that all come back at once bring it down again)"
      )
      try await alice.waitsToReconnect("after the server \(loss) the connection")
      #expect(
        alice.clock.requestedSleeps.last == policy.firstDelay,
        "the wait after a loss must be policy.firstDelay (1 second) every time, not \(alice.clock.requestedSleeps.last.map { "\($0)" } ?? "none")"
      )
      alice.clock.advance(by: policy.firstDelay)
      let back = await eventually { server.names.contains("alice") }
      try #require(
        back,
        "runReconnectingChat(…) did not join again after its wait (the server \(loss) the connection)"
      )
    }
    // The server lists alice as soon as it has welcomed her; she prints "* reconnected" once
    // the welcome has reached her, a moment later.
    _ = await eventually { alice.printed.value.filter { $0 == "* reconnected" }.count >= 2 }
    let reconnected = alice.printed.value.filter { $0 == "* reconnected" }.count
    #expect(reconnected == 2, "after each loss, print \"* reconnected\" once back")

    alice.input.finish()
    try await alice.end(
      "runReconnectingChat(…) after its input ended",
      hint: "at the end of the input, stop the other side (cancel the task group's children), "
        + "hang up, and return")
  }

  @Test("Tries policy.attempts times, each after its wait, then gives up")
  func triesAfterEachWait() async throws {
    let server = try startedServer()
    let port = server.port
    let alice = Chat("alice", port: port)
    defer {
      alice.run.cancel()
      server.stop()
    }
    try await alice.joins(server)
    server.stop()
    try await alice.waitsToReconnect("after the server went away")
    // From here on, every try reaches a listener that counts it and closes it at once.
    let refusing = try await refusingListener(on: port)

    for (attempt, seconds) in [1, 2, 4].enumerated() {
      #expect(
        refusing.refused == attempt,
        "before the wait of \(seconds) s had passed, \(refusing.refused) tries had been made, not \(attempt): each try comes after its wait"
      )
      alice.clock.advance(by: .seconds(seconds))
      if attempt < 2 {
        guard try await alice.waitsToTryAgain(after: attempt + 1) else { return }
      }
    }
    await #expect(throws: ReconnectError.gaveUp) {
      try await alice.endsGivingUp(
        "runReconnectingChat(…) after \(policy.attempts) failed tries",
        hint: "give up after policy.attempts failed tries: throw ReconnectError.gaveUp")
    }
    #expect(
      refusing.refused == policy.attempts,
      "runReconnectingChat(…) gave up after \(refusing.refused) tries, where policy.attempts is \(policy.attempts): it gives up only once that many tries, each after its wait, have failed"
    )
  }

  @Test("Prints lines in order, each before it returns, even when printing is slow")
  func printsInOrderAndInTime() async throws {
    let greeting = (1...20).map { "* note \($0)" }
    let server = try startedServer(greeting: greeting)
    defer { server.stop() }
    let finish = Locked<AsyncStream<String>.Continuation?>(nil)
    // A slow terminal: the first line takes 0.2 s to print. Printing "bob: bye" ends the
    // input, then takes 0.3 s. The command and the tasks of its task group run on one thread
    // of their own: whatever it hands to other tasks runs elsewhere, at its own pace.
    let alice = Chat(
      "alice", port: server.port, on: OneThreadExecutor(),
      whilePrinting: { line in
        if line == greeting[0] { Thread.sleep(forTimeInterval: 0.2) }
        if line == "bob: bye" {
          finish.value?.finish()
          Thread.sleep(forTimeInterval: 0.3)
        }
      })
    finish.withLock { $0 = alice.input }
    defer { alice.run.cancel() }
    try await alice.joins(server)
    _ = await eventually(within: .seconds(3)) { alice.printed.value.count >= greeting.count }
    let printed = alice.printed.value

    let bob = try await join(server, as: "bob")
    try await bob.say("bye")
    try await alice.end(
      "runReconnectingChat(…) after its input ended",
      hint: "at the end of the input, stop the other side (cancel the task group's children), "
        + "hang up, and return")
    #expect(
      alice.printedLate.value.isEmpty,
      Comment(
        rawValue: "it was still printing \(alice.printedLate.value) when runReconnectingChat(…) "
          + "had already returned: the command's work was not over when it said it was"))
    #expect(
      Array(printed.prefix(greeting.count)) == greeting,
      Comment(
        rawValue: "the server sent 20 lines, one after another, and runReconnectingChat(…) "
          + "printed \(printed.prefix(greeting.count)): the first took a while to print, and "
          + "the others overtook it, so a reader sees them out of order; print each line "
          + "before the next, in the order they came"))
  }

  @Test("Cancelling it while a try waits for its welcome hangs up that try and ends it")
  func cancelledWhileTrying() async throws {
    let server = try startedServer()
    let port = server.port
    let alice = Chat("alice", port: port)
    defer {
      alice.run.cancel()
      server.stop()
    }
    try await alice.joins(server)
    server.stop()
    try await alice.waitsToReconnect("after the server went away")
    // The next try reaches a listener that never says welcome.
    var silent: SilentListener?
    let listening = await eventually {
      silent = try? SilentListener(port: port)
      return silent != nil
    }
    try #require(listening, "the test could not listen on port \(port) again")
    alice.clock.advance(by: policy.firstDelay)
    _ = await eventually { silent?.peerConnected() == true }

    alice.run.cancel()
    try? await alice.end(
      "runReconnectingChat(…) cancelled while a try waited for its welcome",
      hint: "cancelling the command must end the try in progress: connect with your 8.1 bridge, "
        + "whose cancellation reaches the socket")
    await eventually(
      "the try in progress to hang up once runReconnectingChat(…) was cancelled (cancelling must reach the socket)"
    ) {
      silent?.peerHungUp() == true
    }
    #expect(
      alice.inputTerminated.value,
      "after a cancelled runReconnectingChat(…) ended, the task reading its input still ran")
  }

  @Test("Long waits keep doubling: nothing in the policy caps them")
  func longWaitsKeepDoubling() async throws {
    let server = try startedServer()
    let patient = ReconnectPolicy(attempts: 3, firstDelay: .seconds(20))
    let alice = Chat("alice", port: server.port, policy: patient)
    defer {
      alice.run.cancel()
      server.stop()
    }
    try await alice.joins(server)
    server.stop()

    let waited = try await alice.waitsDouble([20, 40, 80]) { attempt, asked, seconds in
      """
      with policy.firstDelay 20 s, the wait before try \(attempt) was \
      \(asked.map { "\($0)" } ?? "none"), not \(seconds) s: the policy doubles each wait \
      after a failed try, however long it gets, and sets no ceiling
      """
    }
    guard waited else { return }
    await #expect(throws: ReconnectError.gaveUp) {
      try await alice.endsGivingUp(
        "runReconnectingChat(…) after 3 failed tries",
        hint: "give up after policy.attempts failed tries: throw ReconnectError.gaveUp")
    }
  }

  @Test("A policy of no tries gives up at the first loss, without waiting")
  func noTriesGivesUpAtOnce() async throws {
    let server = try startedServer()
    let alice = Chat("alice", port: server.port, policy: ReconnectPolicy(attempts: 0))
    defer {
      alice.run.cancel()
      server.stop()
    }
    try await alice.joins(server)
    server.stop()

    _ = await eventually { alice.ended.value || alice.clock.sleeperCount > 0 }
    let waited = alice.clock.requestedSleeps
    #expect(
      waited.isEmpty,
      """
      with policy.attempts 0, the connection was lost and runReconnectingChat(…) waited \
      \(waited.map { "\($0)" }.joined(separator: ", ")) to try again: no tries allowed means \
      giving up at the first loss, before any wait (a loop that tries first and counts \
      afterwards makes one try too many)
      """)
    guard waited.isEmpty else { return }
    await #expect(throws: ReconnectError.gaveUp) {
      try await alice.endsGivingUp(
        "runReconnectingChat(…) with policy.attempts 0, after a loss",
        hint: "with no tries allowed, throw ReconnectError.gaveUp at the first loss")
    }
  }

  @Test("Lines typed together reach the others in the order typed, however long each takes")
  func sendsInTheOrderTyped() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let alice = Chat("alice", port: server.port)
    defer { alice.run.cancel() }
    try await alice.joins(server)

    // The first line is held on its way into the connection until alice's next send, or a
    // second (ChatConnection's test hook), without holding a thread: sent one after another,
    // each once the one before has gone, the lines keep their order; a line sent meanwhile
    // from another task overtakes it, every run.
    let lines = [ChatConnection.heldUntilNextSendPrefix + "first", "second", "third"]
    for line in lines { alice.input.yield(line) }
    let expected = lines.map { "alice: " + $0 }
    _ = await eventually(within: .seconds(4)) {
      bob.recorder.lines.value.filter { $0.hasPrefix("alice: ") }.count >= lines.count
    }
    let received = bob.recorder.lines.value.filter { $0.hasPrefix("alice: ") }
    let fault = EventOrder.fault(received: received, expected: expected)
    #expect(
      fault == nil,
      Comment(
        rawValue: "alice typed 3 lines at once, the first slow on its way into the connection, "
          + "and bob received them wrong: \(fault.map { "\($0)" } ?? ""). The others must see "
          + "the lines in the order typed: each is sent once the one before it has gone; "
          + "sends made from several tasks at once (a child task or a Task per line) overtake "
          + "each other whenever one of them is slow"))
    alice.input.finish()
    try await alice.end(
      "runReconnectingChat(…) after its input ended",
      hint: "at the end of the input, stop the other side (cancel the task group's children), "
        + "hang up, and return")
  }

  @Test("Lines typed before it joins are sent once it has, even if the input ended first")
  func sendsWhatWasTypedBeforeJoining() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    // Typed, and the input ended, before the command is called. The command and its tasks
    // run on one thread of their own, one job after another: code that reads the input
    // before the first connect has completed does so, every run, before the welcome is in.
    let lines = ["good morning", "anyone here?"]
    let alice = Chat(
      "alice", port: server.port, on: OneThreadExecutor(), typedFirst: lines,
      inputEndedFirst: true)
    defer { alice.run.cancel() }
    try await alice.end(
      "runReconnectingChat(…) whose input had ended before it was called",
      hint: "join first, send the lines waiting in the input, then hang up and return")
    _ = await eventually { bob.recorder.lines.value.contains("* alice left") }
    let received = bob.recorder.lines.value.filter { $0.hasPrefix("alice: ") }
    let notSent = alice.printed.value.filter { $0.hasPrefix("! not sent: ") }
    #expect(
      received == lines.map { "alice: " + $0 } && notSent.isEmpty,
      Comment(
        rawValue: "two lines were in the input before runReconnectingChat(…) was called, and "
          + "the input had ended; bob received \(received), and it printed \(notSent): the "
          + "input was read before the first connection was made, so the lines waiting there "
          + "found no connection and were lost, and the ended input ended the command before "
          + "it joined. Lines typed while it joins are the user's like any others: they are "
          + "sent once it has joined"))

    // A first connect that fails throws its error, even when the input has already ended.
    let refused = Chat(
      "alice", port: try closedPort(), on: OneThreadExecutor(), inputEndedFirst: true)
    defer { refused.run.cancel() }
    let outcome = await Result {
      try await refused.end(
        "runReconnectingChat(…) whose first connect is refused, its input already ended",
        hint: "a failed first connect must end the command at once, with its error")
    }
    #expect(
      throws: ChatConnectionError.self,
      Comment(
        rawValue: "the first connect was refused, and runReconnectingChat(…) \(outcome.described) "
          + "because its input had already ended: the input was read before the first "
          + "connection was made. A failed first connect ends the command with its error, "
          + "whatever the input holds: there is no chat to go back to")
    ) { try outcome.get() }
  }
}
