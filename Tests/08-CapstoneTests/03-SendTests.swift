import ChatKit
import Foundation
import Testing
import WorkbookTesting

@testable import Capstone

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
    // The completions run on the sender's one thread, behind it, as on the main queue.
    let executor = OneThreadExecutor()
    let connection = ChatConnection(callbacksVia: executor.schedule)
    try await legacyConnect(connection, port: server.port, name: "alice")

    try await withDeadline(
      .seconds(2), "send(\"hello\")",
      hint: "the completion's success path (error == nil) never resumes the continuation",
      on: executor
    ) {
      try await connection.send("hello")
    }

    await eventually("bob to receive alice's line") {
      bob.recorder.lines.value.contains("alice: hello")
    }
    connection.disconnect()
  }

  @Test("Sending before joining throws .notConnected")
  func sendBeforeConnectThrows() async throws {
    let connection = ChatConnection()

    let error = await #expect(
      throws: ChatConnectionError.self,
      Comment(
        rawValue: "sending before joining must throw the connection's error (.notConnected): the "
          + "completion's error was swallowed, or never waited for")
    ) {
      try await withDeadline(
        .seconds(2), "send(_:) before connecting",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await connection.send("hello")
      }
    }
    #expect(error == .notConnected, "throw the connection's own error, unchanged")
  }

  @Test("A line with a newline in it throws .invalidLine, and the next line still goes")
  func invalidLineThrows() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let connection = ChatConnection()
    try await legacyConnect(connection, port: server.port, name: "alice")

    let error = await #expect(
      throws: ChatConnectionError.self,
      Comment(
        rawValue: "a line with a newline must throw the connection's error (.invalidLine): the "
          + "completion's error was swallowed, or never waited for")
    ) {
      try await withDeadline(
        .seconds(2), "send(\"two\\nlines\")",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await connection.send("two\nlines")
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
}
