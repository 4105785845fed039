import Foundation
import Testing
import WorkbookTesting

@testable import Capstone
@testable import ChatKit

/// A clipper command run in a task, with its input pipe and what it printed.
private struct Session {
  let input: Pipe
  let printed: Locked<[String]>
  /// The lines whose `output` call was still running, or started, once `runClipper` had
  /// returned.
  let printedLate: Locked<[String]>
  /// True once `runClipper` has returned or thrown.
  let ended: Locked<Bool>
  let run: Task<Void, any Error>
  /// The input as the command sees it: notes a blocking read on a shared thread (8.4).
  let probe: ProbedInput

  /// Runs `runClipper` as `name` on `port` (the server's by default), on `executor` if one
  /// is given. `whilePrinting` runs inside each `output` call, before the line is recorded:
  /// a slow terminal, say.
  init(
    _ name: String, server: ChatServer? = nil, port: UInt16? = nil, input: Pipe = Pipe(),
    on executor: OneThreadExecutor? = nil,
    whilePrinting: @escaping @Sendable (String) -> Void = { _ in }
  ) {
    let probe = ProbedInput(input)
    let printed = Locked<[String]>([])
    let printedLate = Locked<[String]>([])
    let ended = Locked(false)
    let printing = Locked<[String]>([])
    let port = port ?? server?.port ?? 0
    run = Task(executorPreference: executor) {
      defer {
        // Whatever is still being printed now is printed after the command returned.
        let unfinished = printing.withLock { printing in
          ended.withLock { $0 = true }
          return printing
        }
        printedLate.withLock { $0 += unfinished }
      }
      try await runClipper(
        name: name, input: probe,
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
        port: port)
    }
    self.input = input
    self.probe = probe
    self.printed = printed
    self.printedLate = printedLate
    self.ended = ended
  }

  /// Records a failure if the input was read on a shared thread: 8.4's mistake, seen here,
  /// or runClipper's own read, past inputLines(from:).
  func expectInputReadOnItsOwnThread(sourceLocation: SourceLocation = #_sourceLocation) async {
    guard let mistake = probe.misplacedRead, let place = probe.misplacedPlace else { return }
    if await inputLinesReadsOnASharedThread() {
      Issue.record(
        Comment(rawValue: mistake + " (8.4: runClipper reads its input with inputLines(from:))"),
        sourceLocation: sourceLocation)
    } else {
      Issue.record(
        Comment(
          rawValue:
            "runClipper read its input itself (availableData) \(place) instead of suspending, "
            + "holding one of the few threads that all tasks share for as long as the user "
            + "does not type; inputLines(from:), tried on its own, reads on a thread of its "
            + "own. Read the input through it"),
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
    // A command that has joined reads its input next: wait for that first read, so that a
    // read on a shared thread is named here, before anything it causes later.
    _ = await eventually(within: .seconds(1)) { probe.readsStarted > 0 }
    await expectInputReadOnItsOwnThread(sourceLocation: sourceLocation)
  }

  /// Waits for the command to end, and says how it ended.
  func end(
    _ what: String, hint: String, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    await expectInputReadOnItsOwnThread(sourceLocation: sourceLocation)
    try await withDeadline(.seconds(3), what, hint: hint, sourceLocation: sourceLocation) {
      [run] in
      try await run.value
    }
  }
}

/// Whether `inputLines(from:)` (8.4), tried on its own input, reads on a shared thread: so a
/// test of a command that reads its input can tell the reader's mistake from its own.
func inputLinesReadsOnASharedThread() async -> Bool {
  let pipe = Pipe()
  let input = ProbedInput(pipe)
  let reading = Task {
    for await _ in inputLines(from: input) {}
  }
  defer { reading.cancel() }
  pipe.write("a line\n")
  _ = await eventually { input.misplacedPlace != nil || input.readCount > 0 }
  try? pipe.fileHandleForWriting.close()
  return input.misplacedPlace != nil
}

/// Why a command would not return at the end of its input.
private let endOfInputHint =
  "at end of input, stop the incoming side too: group.cancelAll() ends the incoming loop "
  + "(its stream's onTermination hangs up), then return"

/// The contract of `runClipper(name:input:output:host:port:)`: each path, what the command
/// and the others see, and the test that checks it (— where a column does not apply, and
/// why).
///
/// | path | result, error | resources: connection, tasks, input | output, order, timing |
/// | --- | --- | --- | --- |
/// | joined, lines both ways | — | — | the greeting first: `printsGreeting`; every line: `printsIncomingLines`, in order, before it returns, with a slow `output`, on one thread and on the shared pool (where a loop in a task it does not wait for runs beside it): `printsInOrderAndInTime`; each typed line sent as typed (spaces and tabs kept), and not printed: `sendsInputLines` |
/// | end of input | returns: `endOfInputReturns` | hangs up after the last line: `endOfInputReturns`; 100 lines, all sent in order first, whenever a task runs: `sendsEverythingBeforeLeaving`; typed together, every other one slow to queue, in order: `keepsTheOrderTyped`; 8 MiB to a server slow to read (from a second after the input ended), all sent first: `waitsForASlowServer` | — |
/// | the server closes | `ClipperError.serverGone`, though input is open: `serverLossThrows` | the input side stops: not checked apart from the run ending (8.6 checks its input stream ends, `inputTerminated`) | — |
/// | the connection is reset | `ClipperError.serverGone`: `resetIsServerGone` | the input side stops: as for the server closing | — |
/// | the connection lost as a line is being sent | `ClipperError.serverGone`, not the send's error: `lostWhileSending` | — | the send fails first (ChatConnection's reset-while-sent hook), on one thread, first in first out, so the input side hears of the loss before the incoming side, every run |
/// | a line too long | goes on: `longLineGoesOn`, `limitInBytes` | — | reported with `output`: `longLineGoesOn`; 1025 bytes in 513 characters reported, exactly 1024 bytes sent: `limitInBytes` |
/// | connect fails | the connection's error, unchanged: a taken name `takenNameThrows`; nothing listening, `.socket(ECONNREFUSED)`, not `.serverGone`: `refusedConnectThrows` | the input: reading it before connecting (so a failed connect leaves a reader behind) — not checked, not a break: 8.4's reader cannot be stopped in a blocking read, so every ending but end of input leaves one waiting for the next line (the solution's too, after `.serverGone` or a cancel), which the article calls harmless for a command about to exit | the others hear nothing of it: `takenNameThrows` |
/// | cancelled while connecting | ends: `cancelling` | the socket hangs up: `cancelling` | — |
/// | cancelled while chatting | ends, returning or throwing: `cancelling` | hangs up: `cancelling`; no task it started outlives it: a line typed after it returned is neither sent nor reported (no `output` call after the return): `cancelling` | — |
/// | blocking reads | — | read on a thread of its own (8.4), checked in every test (`ProbedInput`); runClipper's own read (`availableData` in its child task) told apart from `inputLines(from:)`'s by trying that function alone on the same input; a read that blocks every thread of the pool is named by `PoolStallWatch` and ended by `PoolRelief` closing the input, so the run ends with the cause, not a time-out | — |
/// | a second run | — each run makes its own connection | | |
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
    alice.input.write("  world, spaced out \t\n")
    let spacedLine = "alice:   world, spaced out \t"
    let asTyped = await eventually(within: .seconds(2)) {
      bob.recorder.lines.value.contains(spacedLine)
    }
    #expect(
      asTyped,
      "alice typed \"  world, spaced out \\t\" and bob received \(bob.recorder.lines.value.filter { $0.hasPrefix("alice:") }.dropFirst()): a typed line is sent as it was typed, its spaces and tabs included; trimming it changes what she wrote"
    )
    try alice.input.fileHandleForWriting.close()
    try await alice.end(
      "runClipper(…) after its input ended",
      hint: endOfInputHint)
    #expect(
      alice.printed.value.isEmpty,
      "clipper printed \(alice.printed.value), which the server never sent alice (it sends a member's lines to the others only): output shows what comes from the server, and the notice of a line not sent, nothing else"
    )
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

    // The server sends alice nothing of her own, and bob says nothing: whatever alice's
    // output gets from here on is her clipper's own report.
    let printedBefore = alice.printed.value.count
    alice.input.write(String(repeating: "x", count: ChatServer.maximumLineLength + 1) + "\n")
    alice.input.write("still here\n")
    await eventually(
      "bob to receive alice's line after her over-long one: a line that is too long must not "
        + "end the chat (catch ChatConnectionError.invalidLine from send, report it with "
        + "output, and go on)"
    ) {
      bob.recorder.lines.value.contains("alice: still here")
    }
    let reportedInTime = alice.printed.value.count > printedBefore
    let reportedLate =
      reportedInTime
      ? false : await eventually(within: .seconds(1)) { alice.printed.value.count > printedBefore }
    #expect(
      reportedInTime,
      Comment(
        rawValue: reportedLate
          ? "the over-long line was reported only after the line typed after it had gone "
            + "out: the lines were not handled one after another, in the order typed; a send "
            + "handed to a task of its own runs in any order, after lines typed later"
          : "the over-long line was not sent, and nothing told the user: a line that cannot "
            + "be sent must be reported with output (the user would think it was sent), and "
            + "the chat goes on"))
    try alice.input.fileHandleForWriting.close()
    try await alice.end("runClipper(…) after its input ended", hint: endOfInputHint)
  }

  @Test(
    "The limit is 1024 bytes, not characters: a line of exactly 1024 goes, one of 1025 does not")
  func limitInBytes() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let alice = Session("alice", server: server)
    defer { alice.run.cancel() }
    await alice.joins(server, as: "alice")

    // 512 two-byte characters: 1024 bytes. One more byte makes 1025 bytes in 513 characters.
    let longest = String(repeating: "é", count: ChatServer.maximumLineLength / 2)
    let printedBefore = alice.printed.value.count
    alice.input.write(longest + "\n")
    alice.input.write(longest + "x\n")
    alice.input.write("still here\n")
    let arrived = await eventually(within: .seconds(3)) {
      bob.recorder.lines.value.contains("alice: still here")
    }
    let received = bob.recorder.lines.value
    #expect(
      arrived && received.contains("alice: " + longest),
      Comment(
        rawValue: !received.contains("alice: " + longest)
          ? "alice typed a line of exactly \(ChatServer.maximumLineLength) bytes (512 \"é\"), and bob never received it: the limit allows 1024 bytes, so that line must go (a check of its own that uses < instead of <=, or counts something else, refuses it); leave the judging to send, which throws .invalidLine"
          : "after a line of 1025 bytes, but only 513 characters, bob never received the next line: that line is too long in bytes, which is what the limit counts; send throws .invalidLine for it, which is reported, and the chat goes on"
      ))
    #expect(
      alice.printed.value.count == printedBefore + 1,
      "of the two lines near the limit, only the one of 1025 bytes is too long, so exactly one notice must be printed; clipper printed \(alice.printed.value.dropFirst(printedBefore))"
    )
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

  @Test("A connect that nobody answers throws the connection's error, not .serverGone")
  func refusedConnectThrows() async throws {
    let alice = Session("alice", port: try closedPort())
    defer {
      alice.run.cancel()
      try? alice.input.fileHandleForWriting.close()
    }

    let outcome = await Result {
      try await alice.end(
        "runClipper(…) with nothing listening on its port",
        hint: "a failed connect must end the command")
    }
    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    // serverGone means "we were chatting, and the server left": a chat never joined is
    // a different story, and the connection's error (ECONNREFUSED) tells it.
    guard case .failure(ChatConnectionError.socket(let failure)) = outcome,
      failure.code == ECONNREFUSED
    else {
      Issue.record(
        Comment(
          rawValue: "nothing listens on the port, so the connect fails with "
            + "ChatConnectionError.socket(ECONNREFUSED), and runClipper \(outcome.described): a "
            + "failed connect throws the connection's own error, unchanged; "
            + "ClipperError.serverGone is for a server that goes away once the chat has begun, "
            + "and would send the user looking for a crash instead of a wrong port"))
      return
    }
  }

  @Test(
    "Prints incoming lines in order, each before it returns, even when printing is slow",
    arguments: [true, false])
  func printsInOrderAndInTime(onOneThread: Bool) async throws {
    try await printsInOrderAndInTime(on: onOneThread ? OneThreadExecutor() : nil)
  }

  private func printsInOrderAndInTime(on executor: OneThreadExecutor?) async throws {
    let greeting = (1...20).map { "* note \($0)" }
    let server = try startedServer(greeting: greeting)
    defer { server.stop() }
    let input = Pipe()
    let writer = input.fileHandleForWriting
    // A slow terminal: the first line takes 0.2 s to print. Printing "bob: bye" ends the
    // input, then takes 0.3 s. On one thread of their own, the command and the tasks of its
    // task group take turns, and whatever it hands to detached work runs elsewhere, at its
    // own pace; on the shared pool, tasks it starts run beside it, so a loop it does not
    // wait for can still be printing when it returns.
    let alice = Session(
      "alice", server: server, input: input, on: executor,
      whilePrinting: { line in
        if line == greeting[0] { Thread.sleep(forTimeInterval: 0.2) }
        if line == "bob: bye" {
          try? writer.close()
          // On the pool, long enough for whatever it runs beside the loop to finish.
          Thread.sleep(forTimeInterval: executor == nil ? 1 : 0.3)
        }
      })
    defer { alice.run.cancel() }
    await alice.joins(server, as: "alice")
    _ = await eventually(within: .seconds(3)) { alice.printed.value.count >= greeting.count }
    let printed = alice.printed.value

    let sayByeAndEnd = {
      let bob = try await join(server, as: "bob")
      try await bob.say("bye")
      try await alice.end("runClipper(…) after its input ended", hint: endOfInputHint)
    }
    if executor == nil {
      // The pool check keeps threads of the pool for itself, and the slow print holds
      // another: then no task could run beside the printing loop, which is what this case
      // is for, so the check is off while bob says bye. Before that, it watches a while,
      // so that a command that blocks a thread of the pool as it waits is still named.
      _ = try await withDeadline(.seconds(5), "runClipper(…) while it waited for input") {
        try? await Task.sleep(for: .milliseconds(1600))
      }
      try await withAllPoolThreadsFree { try await sayByeAndEnd() }
    } else {
      try await sayByeAndEnd()
    }
    #expect(
      alice.printedLate.value.isEmpty,
      Comment(
        rawValue: "clipper was still printing \(alice.printedLate.value) when runClipper(…) "
          + "had already returned: the command's work was not over when it said it was, and a "
          + "caller that prints after it (or exits) garbles or loses those lines; a task it "
          + "started and cancelled but did not wait for (Task { }) runs on after it returns"))
    #expect(
      Array(printed.prefix(greeting.count)) == greeting,
      Comment(
        rawValue: "the server sent 20 lines, one after another, and clipper printed "
          + "\(printed.prefix(greeting.count)): the first took a while to print, and the "
          + "others overtook it, so a reader sees them out of order; print each line before "
          + "the next, in the order they came"))
  }

  @Test("At the end of input, every line typed is sent, in order, before it hangs up")
  func sendsEverythingBeforeLeaving() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    // The command and the tasks of its task group run on one thread of their own, and every
    // thread of the shared pool is held from before the input arrives until the command has
    // returned (or a second has passed): work the command hands to other tasks runs only
    // after that.
    let alice = Session("alice", server: server, on: OneThreadExecutor())
    defer { alice.run.cancel() }
    await alice.joins(server, as: "alice")
    let lines = (1...100).map { "line \($0)" }
    let writer = alice.input.fileHandleForWriting
    let ended = alice.ended
    // Without the pool check for that moment: the test holds every thread of the pool itself.
    await withoutPoolCheck {
      await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        Thread {
          let hold = PoolHold()
          try? writer.write(contentsOf: Data(lines.map { $0 + "\n" }.joined().utf8))
          try? writer.close()
          let start = ContinuousClock.now
          while !ended.value && ContinuousClock.now - start < .seconds(1) { usleep(1000) }
          hold.end()
          done.resume()
        }.start()
      }
    }
    try await alice.end("runClipper(…) after its input ended", hint: endOfInputHint)

    let expected = lines.map { "alice: " + $0 } + ["* alice left"]
    _ = await eventually { bob.recorder.lines.value.contains("* alice left") }
    let received = bob.recorder.lines.value.filter {
      $0.hasPrefix("alice: ") || $0 == "* alice left"
    }
    let sent = received.filter { $0.hasPrefix("alice: ") }
    #expect(
      received == expected,
      Comment(
        rawValue: "alice typed 100 lines, and her input ended; bob received \(sent.count) of "
          + "them"
          + (sent == expected.filter(Set(sent).contains) ? "" : ", out of order")
          + (received.last == "* alice left" ? "" : ", and alice never left")
          + " before she hung up: at the end of input every line typed must already be on its "
          + "way, in the order typed (a send still to be made when the command hangs up is "
          + "lost, and a send handed to a task of its own may be just that)"))
  }

  @Test("Lines typed together are sent in the order typed, however long each takes to queue")
  func keepsTheOrderTyped() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let alice = Session("alice", server: server)
    defer { alice.run.cancel() }
    await alice.joins(server, as: "alice")

    // Every other line is held 20 ms on its way into the connection (ChatConnection's test
    // hook), as a preempted thread would be: sends made one after another keep the order
    // typed; sends made from several tasks at once let the next line overtake.
    let lines = (1...20).map {
      $0 % 2 == 1 ? ChatConnection.slowToQueuePrefix + "line \($0)" : "line \($0)"
    }
    // With every thread of the pool free (no squeeze holds one meanwhile): sends from several
    // tasks at once need two threads to overtake each other.
    let expected = lines.map { "alice: " + $0 }
    await withAllPoolThreadsFree {
      alice.input.write(lines.map { $0 + "\n" }.joined())
      _ = await eventually(within: .seconds(5)) {
        bob.recorder.lines.value.filter { $0.hasPrefix("alice: ") }.count >= lines.count
      }
    }
    let received = bob.recorder.lines.value.filter { $0.hasPrefix("alice: ") }
    let fault = EventOrder.fault(received: received, expected: expected)
    #expect(
      fault == nil,
      Comment(
        rawValue:
          "alice typed 20 lines at once, and bob received them wrong: \(fault.map { "\($0)" } ?? ""). Each line must be sent once the one before it has gone, in the order typed; sends made from several tasks at once (a child task or a Task per line) overtake each other whenever one of them is slow to start"
      ))
    try alice.input.fileHandleForWriting.close()
    try await alice.end("runClipper(…) after its input ended", hint: endOfInputHint)
  }

  @Test("With a server slow to read, every line typed is sent before it hangs up")
  func waitsForASlowServer() async throws {
    // A server that welcomes alice, then reads nothing until she has returned, or a second
    // after her input ended: 8 MiB of her lines pile up, far more than the kernel holds for
    // her.
    let listener = try SilentListener(receiveBuffer: 4_096)
    let alice = Session("alice", port: listener.port)
    defer { alice.run.cancel() }
    guard await eventually({ listener.say("* welcome alice\n") || alice.ended.value }),
      !alice.ended.value
    else {
      // It ended, or never connected: how is the other tests' to say, and this one's too.
      try await alice.end("runClipper(…) before it connected", hint: endOfInputHint)
      Issue.record(
        listener.peerConnected()
          ? "runClipper(…) returned though its input was still open"
          : "runClipper(…) never connected to the server at port \(listener.port)")
      return
    }
    let line = String(repeating: "x", count: 1_000)
    let lines = 8_192
    let writer = alice.input.fileHandleForWriting
    let typedAll = Locked(false)
    Thread.detachNewThread {
      let chunk = Data(String(repeating: line + "\n", count: 64).utf8)
      for _ in 0..<(lines / 64) { try? writer.write(contentsOf: chunk) }
      try? writer.close()
      typedAll.withLock { $0 = true }
    }
    // The server starts reading a second after the input ended, not after the typing began:
    // on a busy machine, typing 8 MiB can take longer than that, and a command that hangs
    // up without waiting for its sends must still find the server not reading when it does.
    // (An input reader that reads only as fast as lines are sent never lets the typing end;
    // then the server reads after ten seconds.)
    _ = await eventually(within: .seconds(10)) { typedAll.value || alice.ended.value }
    _ = await eventually(within: .seconds(1)) { alice.ended.value }
    let returnedEarly = alice.ended.value
    // Returned, it may still be hanging up: read only once the connection has let go.
    if returnedEarly { _ = await eventually { listener.clientLetGo() } }

    // Under Thread Sanitizer, 8 MiB through the command's code takes several times longer;
    // beside a build on two cores, a correct answer took more than 5 s one run in six.
    let received = try await withDeadline(
      .seconds(underThreadSanitizer ? 30 : 10),
      "the server to read all alice sent, until she hung up",
      hint: endOfInputHint
    ) {
      var bytes: [UInt8] = []
      while true {
        let (more, hungUp) = listener.drain()
        bytes += more
        if hungUp { return bytes }
        try await Task.sleep(for: .milliseconds(1))
      }
    }
    try await alice.end("runClipper(…) after its input ended", hint: endOfInputHint)
    let sent = received.split(separator: UInt8(ascii: "\n")).count { $0.count == line.utf8.count }
    #expect(
      sent == lines,
      "alice typed \(lines) lines, and her input ended; the server, slow to read, got \(sent) of them before she hung up\(returnedEarly ? " (she returned while it had not read any yet)" : ""): a line is sent once its send's completion has come; a send still waiting for it when the command hangs up is cut off, and so is its line"
    )
  }

  @Test("When the connection is reset, it throws .serverGone, though input is still open")
  func resetIsServerGone() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let alice = Session("alice", server: server)
    defer {
      alice.run.cancel()
      try? alice.input.fileHandleForWriting.close()
    }
    await alice.joins(server, as: "alice")
    let bob = try await join(server, as: "bob")
    let listening = await eventually { alice.printed.value.contains("* bob joined") }
    #expect(listening, "clipper never printed \"* bob joined\"")

    withExtendedLifetime(bob) { _ = server.disconnect("alice", reset: true) }

    await #expect(
      throws: ClipperError.serverGone,
      Comment(
        rawValue:
          "the connection was reset (the stream of incoming lines ends with .socket(…), not "
          + ".closedByServer): that is the server gone too, so runClipper must throw "
          + "ClipperError.serverGone")
    ) {
      try await alice.end(
        "runClipper(…) after its connection was reset",
        hint: "however the incoming lines end with an error, cancel the input side (it would "
          + "wait for input forever) and throw ClipperError.serverGone")
    }
  }

  @Test("When the connection is lost as a line is being sent, it throws .serverGone")
  func lostWhileSending() async throws {
    let server = try startedServer()
    defer { server.stop() }
    // On one thread, first in, first out: the connection fails the waiting send before it
    // tells the delegate, so the input side hears of the loss first, every run (on the pool
    // the two sides would race, and either could decide).
    let alice = Session("alice", server: server, on: OneThreadExecutor())
    defer {
      alice.run.cancel()
      try? alice.input.fileHandleForWriting.close()
    }
    await alice.joins(server, as: "alice")

    // The connection's test hook: this line's write fails as a reset connection's does.
    alice.input.write(ChatConnection.resetWhileSentPrefix + "anyone there?\n")
    let outcome = await Result {
      try await alice.end(
        "runClipper(…) after its connection was lost as a line was being sent",
        hint: "however one side learns that the connection is lost, cancel the other side and "
          + "throw ClipperError.serverGone")
    }
    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    #expect(
      (outcome.failure as? ClipperError) == .serverGone,
      Comment(
        rawValue: "the connection was lost while alice's line was being sent: the send failed "
          + "with the loss (.socket(ECONNRESET)) before the incoming lines ended, and runClipper "
          + "\(outcome.described). The server is gone whichever side hears it first: a send "
          + "that fails for any reason but an invalid line means the same as incoming lines "
          + "that end with an error, and the caller must get ClipperError.serverGone either "
          + "way, not whatever the send happened to see"))
  }

  @Test("Cancelling it hangs up and ends it, while connecting or while chatting")
  func cancelling() async throws {
    // While connecting: the listener never says welcome.
    let silent = try SilentListener()
    let connecting = Session("alice", port: silent.port)
    defer { try? connecting.input.fileHandleForWriting.close() }
    try await Task.sleep(for: .milliseconds(100))
    connecting.run.cancel()
    try? await connecting.end(
      "a runClipper(…) cancelled while it connected",
      hint: "cancelling the command while it connects must end it: the connect must stop")
    await eventually(
      "the cancelled runClipper(…) to hang up the connection it was making (cancelling must reach the socket)"
    ) {
      silent.peerHungUp()
    }

    // While chatting, with input still open.
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let chatting = Session("ada", server: server)
    defer { try? chatting.input.fileHandleForWriting.close() }
    await chatting.joins(server, as: "ada")
    chatting.run.cancel()
    try? await chatting.end(
      "a runClipper(…) cancelled while it chatted",
      hint: "cancelling the command must end both of its sides, and hang up")
    await eventually(
      "the cancelled runClipper(…) to leave the chat: a cancelled command hangs up"
    ) {
      bob.recorder.lines.value.contains("* ada left")
    }
    // Its input is still open: a line typed now finds out whether anything the command
    // started still reads it, and tries to send it or to print about it.
    chatting.input.write("typed after the end\n")
    _ = await eventually(within: .seconds(1)) { !chatting.printedLate.value.isEmpty }
    #expect(
      chatting.printedLate.value.isEmpty,
      Comment(
        rawValue: "a line typed after the cancelled runClipper(…) had returned made it print "
          + "\(chatting.printedLate.value): something it started was still reading its input "
          + "and sending, after it said it was done. A task it started outlived it: a Task { } "
          + "is neither cancelled with the command nor waited for, so cancelling the command "
          + "must stop every side it started before it returns"))
  }
}
