import Dispatch
import Testing
import WorkbookTesting

@testable import ChatKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("ChatServer and ChatConnection")
struct ChatServerTests {
  @Test("Port 0 picks a free port on 127.0.0.1; a taken port is refused")
  func ports() throws {
    let server = try startedServer()
    defer { server.stop() }
    #expect(server.port != 0)

    let second = ChatServer(port: server.port)
    #expect(throws: SocketError("bind", code: EADDRINUSE)) { try second.start() }
  }

  @Test("A line reaches every other client, never the sender")
  func delivery() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let ada = try await join(server, as: "ada")
    let bob = try await join(server, as: "bob")
    let cy = try await join(server, as: "cy")

    try await ada.send("hello")
    await bob.expectToReceive("ada: hello")
    await cy.expectToReceive("ada: hello")

    // Lines from one connection arrive in order: once cy's reply reaches ada, ada's own
    // line would have reached her before it.
    try await cy.send("hi ada")
    await ada.expectToReceive("cy: hi ada")
    #expect(ada.recorder.messages == ["cy: hi ada"])
    #expect(server.names == ["ada", "bob", "cy"])
  }

  @Test("Joins and leaves are announced to the others; the leaver hears nil")
  func joinAndLeave() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let ada = try await join(server, as: "ada")
    let bob = try await join(server, as: "bob")
    await ada.expectToReceive("* bob joined")

    bob.connection.disconnect()
    await ada.expectToReceive("* bob left")
    await eventually("bob's delegate to hear of the end", within: limit) {
      bob.recorder.ends.value == [nil]
    }
    #expect(!bob.recorder.lines.value.contains("* bob joined"), "a joiner hears of itself")
    #expect(server.names == ["ada"])
  }

  @Test("Lines from one sender arrive in the order sent")
  func orderPerSender() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let ada = try await join(server, as: "ada")
    let bob = try await join(server, as: "bob")
    for number in 0..<300 { ada.connection.send("line \(number)") }
    try await ada.send("done")
    await bob.expectToReceive("ada: done")
    #expect(bob.recorder.messages == (0..<300).map { "ada: line \($0)" } + ["ada: done"])
  }

  @Test("A client that vanishes mid-line is announced as gone; the rest carry on")
  func abruptDisconnect() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let ada = try await join(server, as: "ada")
    let bob = try await join(server, as: "bob")

    let raw = try RawClient(port: server.port)
    try raw.send("ghost\n")
    await ada.expectToReceive("* ghost joined")
    try raw.send("half a li")
    raw.reset()
    await ada.expectToReceive("* ghost left")

    let quiet = try RawClient(port: server.port)
    try quiet.send("mute\nnever fini")
    await ada.expectToReceive("* mute joined")
    quiet.reset()
    await ada.expectToReceive("* mute left")

    try await bob.send("still here")
    await ada.expectToReceive("bob: still here")
    #expect(!ada.recorder.lines.value.contains { $0.hasPrefix("ghost:") || $0.hasPrefix("mute:") })
    #expect(server.names == ["ada", "bob"])
  }

  @Test("A line over the limit is refused to its sender alone; the connection stays")
  func lineLimit() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let ada = try await join(server, as: "ada")
    let raw = try RawClient(port: server.port)
    try raw.send("long\n")
    await ada.expectToReceive("* long joined")

    let longest = String(repeating: "x", count: ChatServer.maximumLineLength)
    try raw.send(longest + "\n")
    try raw.send(longest + "y\n")
    // Far more than the limit without a newline: refused once, never buffered.
    try raw.send(String(repeating: "z", count: 200_000))
    try raw.send("\nafter\n")

    await ada.expectToReceive("long: after")
    #expect(ada.recorder.messages == ["long: \(longest)", "long: after"])
    let refusal = "! line too long (max \(ChatServer.maximumLineLength) bytes)"
    await eventually("two refusals for the raw client", within: limit) {
      raw.receive()
      return raw.lines == ["* welcome long", refusal, refusal]
    }
    #expect(raw.lines == ["* welcome long", refusal, refusal])
  }

  @Test("Bad and taken names are rejected; connect reports the server's reason")
  func names() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let ada = try await join(server, as: "ada")

    for (name, reply) in [
      ("ada", "! name taken: ada"),
      ("two words", "! invalid name: use 1 to 32 letters, digits, '-', '_' or '.'"),
      ("", "! invalid name: use 1 to 32 letters, digits, '-', '_' or '.'"),
      (
        String(repeating: "n", count: 33),
        "! invalid name: use 1 to 32 letters, digits, '-', '_' or '.'"
      ),
    ] {
      await #expect(throws: ChatConnectionError.rejected(reply)) {
        try await connect(ChatConnection(), port: server.port, name: name)
      }
    }
    let other = try await join(server, as: "a-B_9.z")
    await ada.expectToReceive("* a-B_9.z joined")
    #expect(other.recorder.lines.value.isEmpty)
  }

  @Test("Connecting where nothing listens fails with ECONNREFUSED")
  func refused() async throws {
    let server = try startedServer()
    let port = server.port
    server.stop()
    try await Task.sleep(for: .milliseconds(50))  // the listening socket closes on its queue
    await #expect(throws: ChatConnectionError.socket(SocketError("connect", code: ECONNREFUSED))) {
      try await connect(ChatConnection(), port: port, name: "late")
    }
  }

  @Test("Send before connecting fails; disconnect during connect cancels it")
  func misuse() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    let member = Member(name: "early", connection: connection, recorder: Recorder())
    await #expect(throws: ChatConnectionError.notConnected) { try await member.send("too soon") }

    // A listener that never answers, so the connect is surely still waiting for its
    // welcome when disconnect() comes.
    let silent = try SilentListener()
    let cancelled = ChatConnection()
    await #expect(throws: ChatConnectionError.cancelled) {
      try await withDeadline(limit, "connect, then disconnect") {
        try await withCheckedThrowingContinuation {
          (continuation: CheckedContinuation<Void, any Error>) in
          cancelled.connect(port: silent.port, name: "quick") { error in
            if let error { continuation.resume(throwing: error) } else { continuation.resume() }
          }
          DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
            cancelled.disconnect()
          }
        }
      }
    }
  }

  @Test("The greeting follows the welcome; a delegate set after the connect misses it")
  func greeting() async throws {
    let server = ChatServer(port: 0, greeting: ["* hello from the server", "* 2 rules"])
    try server.start()
    defer { server.stop() }
    let early = try await join(server, as: "early")
    await early.expectToReceive("* 2 rules")
    #expect(early.recorder.lines.value == ["* hello from the server", "* 2 rules"])

    // Set only once the connect completed: the greeting was read with the welcome, before.
    let late = Member(name: "late", connection: ChatConnection(), recorder: Recorder())
    try await connect(late.connection, port: server.port, name: "late")
    late.connection.delegate = late.recorder
    try await early.send("after")
    await late.expectToReceive("early: after")
    #expect(late.recorder.lines.value == ["early: after"], "the greeting went to no delegate")
  }

  @Test("echoesJoin: the joiner hears its own join after the greeting; the others once")
  func echoesJoin() async throws {
    let server = ChatServer(port: 0, greeting: ["* hi"], echoesJoin: true)
    try server.start()
    defer { server.stop() }
    let ada = try await join(server, as: "ada")
    await ada.expectToReceive("* ada joined")
    let bob = try await join(server, as: "bob")
    await bob.expectToReceive("* bob joined")
    await ada.expectToReceive("* bob joined")
    // A line sent after both joins, so that nothing else is still on its way to ada.
    try await bob.send("done")
    await ada.expectToReceive("bob: done")
    #expect(ada.recorder.lines.value == ["* hi", "* ada joined", "* bob joined", "bob: done"])
    #expect(bob.recorder.lines.value == ["* hi", "* bob joined"])
  }

  @Test("callbacksVia: every completion and delegate call goes through the scheduler")
  func callbacksVia() async throws {
    let server = ChatServer(port: 0, greeting: ["* hi"])
    try server.start()
    defer { server.stop() }
    let queue = DispatchQueue(label: "test scheduler")
    let scheduled = Locked(0)
    let connection = ChatConnection(callbacksVia: { work in
      scheduled.withLock { $0 += 1 }
      queue.async(execute: work)
    })
    let member = Member(name: "via", connection: connection, recorder: Recorder())
    connection.delegate = member.recorder
    try await connect(connection, port: server.port, name: "via")
    await member.expectToReceive("* hi")
    try await member.send("hello")
    // The connect's completion, the greeting's delivery and the send's completion.
    #expect(scheduled.value == 3)
  }

  @Test("Stopping the server ends every client with closedByServer")
  func stop() async throws {
    let server = try startedServer()
    let ada = try await join(server, as: "ada")
    let bob = try await join(server, as: "bob")
    server.stop()
    for member in [ada, bob] {
      await eventually("\(member.name) to hear the server went away", within: limit) {
        member.recorder.ends.value == [.closedByServer]
      }
    }
    await #expect(throws: ChatConnectionError.notConnected) { try await ada.send("anyone?") }
  }

  @Test("disconnect(_:) ends one client, by end of file or reset; it may join again at once")
  func disconnectOne() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let ada = try await join(server, as: "ada")
    let bob = try await join(server, as: "bob")

    #expect(server.disconnect("bob"))
    await eventually("bob to hear the server closed on him", within: limit) {
      bob.recorder.ends.value == [.closedByServer]
    }
    await ada.expectToReceive("* bob left")
    #expect(server.names == ["ada"])
    #expect(!server.disconnect("nobody"))

    let again = try await join(server, as: "bob")
    #expect(server.disconnect("bob", reset: true))
    await eventually("bob to hear the connection was reset", within: limit) {
      again.recorder.ends.value == [.socket(SocketError("read", code: ECONNRESET))]
    }
    await eventually("ada to hear that bob left a second time", within: limit) {
      ada.recorder.lines.value.filter { $0 == "* bob left" }.count == 2
    }
    #expect(ada.recorder.lines.value.filter { $0 == "* bob left" }.count == 2)
    try await ada.send("still here")
  }
}
