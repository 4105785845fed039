import ChatKit
import Foundation
import Testing
import WorkbookTesting

@testable import Capstone

/// A clipper command run in a task, with its input pipe and what it printed.
private struct Session {
  let input: Pipe
  let printed: Locked<[String]>
  let run: Task<Void, any Error>
  /// The input as the command sees it: notes a blocking read on a shared thread (8.4).
  let probe: ProbedInput

  init(_ name: String, server: ChatServer) {
    let input = Pipe()
    let probe = ProbedInput(input)
    let printed = Locked<[String]>([])
    run = Task {
      try await runClipper(
        name: name, input: probe,
        output: { line in printed.withLock { $0.append(line) } },
        port: server.port)
    }
    self.input = input
    self.probe = probe
    self.printed = printed
  }

  /// Records a failure if the input was read on a shared thread (8.4's mistake, seen here).
  func expectInputReadOnItsOwnThread(sourceLocation: SourceLocation = #_sourceLocation) {
    if let mistake = probe.misplacedRead {
      Issue.record(
        Comment(rawValue: mistake + " (8.4: runClipper reads its input with inputLines(from:))"),
        sourceLocation: sourceLocation)
    }
  }

  /// Waits until `name` has joined `server`.
  func joins(
    _ server: ChatServer, as name: String, sourceLocation: SourceLocation = #_sourceLocation
  ) async {
    await eventually("\(name) to join", sourceLocation: sourceLocation) {
      server.names.contains(name) || probe.misplacedRead != nil
    }
    expectInputReadOnItsOwnThread(sourceLocation: sourceLocation)
  }

  /// Waits for the command to end, and says how it ended.
  func end(
    _ what: String, hint: String, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    expectInputReadOnItsOwnThread(sourceLocation: sourceLocation)
    try await withDeadline(.seconds(3), what, hint: hint, sourceLocation: sourceLocation) {
      [run] in
      try await run.value
    }
  }
}

/// Why a command would not return at the end of its input.
private let endOfInputHint =
  "at end of input, stop the incoming side too: group.cancelAll() ends the incoming loop "
  + "(its stream's onTermination hangs up), then return"

@Suite("8.5 The clipper command")
struct ClipperTests {
  @Test("Prints the server's greeting, which comes with the welcome")
  func printsGreeting() async throws {
    let greeting = "* welcome to the workbook chat"
    let server = try startedServer(greeting: [greeting])
    defer { server.stop() }
    let alice = Session("alice", server: server)
    defer { alice.run.cancel() }
    await alice.joins(server, as: "alice")

    let bob = try await join(server, as: "bob")
    try await bob.say("hi alice")
    // A late subscriber loses whatever came with the welcome, and when the client read the
    // welcome late, bob's lines came in that same read: either way the cause is the order.
    let lateSubscriber =
      "the line the server sent right after the welcome was lost: store or subscribe before "
      + "you start (call incomingLines() before connect(to:port:as:), so its delegate is "
      + "set before the first line can arrive)"
    let printedBob = await eventually { alice.printed.value.contains("bob: hi alice") }
    #expect(
      alice.printed.value.first == greeting,
      Comment(rawValue: lateSubscriber + "; clipper printed \(alice.printed.value)"))
    #expect(printedBob, "clipper never printed bob's line \"bob: hi alice\"")
    try alice.input.fileHandleForWriting.close()
    try await alice.end("runClipper(…) after its input ended", hint: endOfInputHint)
  }

  @Test("Prints every line the server sends")
  func printsIncomingLines() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let alice = Session("alice", server: server)
    defer { alice.run.cancel() }
    await alice.joins(server, as: "alice")

    let bob = try await join(server, as: "bob")
    try await bob.say("hi alice")

    await eventually("clipper to print bob's join and his line") {
      alice.printed.value == ["* bob joined", "bob: hi alice"]
    }
    try alice.input.fileHandleForWriting.close()
    try await alice.end(
      "runClipper(…) after its input ended",
      hint: endOfInputHint)
  }

  @Test("Sends every input line as it is typed")
  func sendsInputLines() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let alice = Session("alice", server: server)
    defer { alice.run.cancel() }
    await alice.joins(server, as: "alice")

    alice.input.write("hello\n")
    await eventually("bob to receive alice's first line while her input is open") {
      bob.recorder.lines.value.contains("alice: hello")
    }
    alice.input.write("world\n")
    await eventually("bob to receive alice's second line") {
      bob.recorder.lines.value.contains("alice: world")
    }
    try alice.input.fileHandleForWriting.close()
    try await alice.end(
      "runClipper(…) after its input ended",
      hint: endOfInputHint)
  }

  @Test("At the end of input it sends what is left, leaves the chat, and returns")
  func endOfInputReturns() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let alice = Session("alice", server: server)
    defer { alice.run.cancel() }

    alice.input.write("bye\n")
    try alice.input.fileHandleForWriting.close()

    try await alice.end(
      "runClipper(…) after its input ended",
      hint: endOfInputHint)
    await eventually("bob to receive alice's last line, then her leaving") {
      bob.recorder.lines.value.suffix(2) == ["alice: bye", "* alice left"]
    }
    #expect(server.names == ["bob"])
  }

  @Test("A line too long to send is reported, and the chat goes on")
  func longLineGoesOn() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let alice = Session("alice", server: server)
    defer { alice.run.cancel() }
    await alice.joins(server, as: "alice")

    alice.input.write(String(repeating: "x", count: ChatServer.maximumLineLength + 1) + "\n")
    alice.input.write("still here\n")
    await eventually(
      "bob to receive alice's line after her over-long one: a line that is too long must not "
        + "end the chat (catch ChatConnectionError.invalidLine from send, report it with "
        + "output, and go on)"
    ) {
      bob.recorder.lines.value.contains("alice: still here")
    }
    try alice.input.fileHandleForWriting.close()
    try await alice.end("runClipper(…) after its input ended", hint: endOfInputHint)
  }

  @Test("When the server goes away it throws .serverGone, though input is still open")
  func serverLossThrows() async throws {
    let server = try startedServer()
    let alice = Session("alice", server: server)
    defer {
      alice.run.cancel()
      try? alice.input.fileHandleForWriting.close()
    }
    await alice.joins(server, as: "alice")
    // Stop the server only once clipper listens, so that this test is about the end of the
    // incoming lines, not about when clipper subscribed (the greeting test covers that).
    let bob = try await join(server, as: "bob")
    let listening = await eventually { alice.printed.value.contains("* bob joined") }
    #expect(
      listening,
      "clipper never printed \"* bob joined\": it was not listening to incoming lines yet")

    withExtendedLifetime(bob) { server.stop() }

    await #expect(
      throws: ClipperError.serverGone,
      Comment(
        rawValue:
          "when the server goes away, runClipper must throw ClipperError.serverGone, not return "
          + "as if the input had ended")
    ) {
      try await alice.end(
        "runClipper(…) after the server stopped",
        hint: "when the incoming lines end, cancel the input side (it would wait for "
          + "input forever) and throw ClipperError.serverGone")
    }
  }

  @Test("A name that is taken throws the connection's error")
  func takenNameThrows() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let impostor = Session("bob", server: server)
    defer {
      impostor.run.cancel()
      try? impostor.input.fileHandleForWriting.close()
    }

    let error = await #expect(
      throws: ChatConnectionError.self,
      Comment(
        rawValue:
          "a failed connect must end the command by throwing the connection's error (do not "
          + "catch it)")
    ) {
      try await impostor.end(
        "runClipper(…) with a taken name", hint: "a failed connect must end the command")
    }
    #expect(error == .rejected("! name taken: bob"), "throw the connection's own error")
    #expect(bob.recorder.lines.value.isEmpty)
  }
}
