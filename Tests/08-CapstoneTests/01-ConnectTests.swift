import ChatKit
import Foundation
import Testing
import WorkbookTesting

@testable import Capstone

@Suite("8.1 Connect")
struct ConnectTests {
  @Test("connect(to:port:as:) returns once the server has welcomed us")
  func connectJoins() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let connection = ChatConnection()

    try await withDeadline(
      .seconds(2), "connect(to:port:as:)",
      hint: "the completion's success path (error == nil) never resumes the continuation"
    ) {
      try await connection.connect(port: server.port, as: "alice")
    }

    #expect(server.names == ["alice", "bob"], "alice should have joined the chat")
    await eventually("bob to hear that alice joined") {
      bob.recorder.lines.value.contains("* alice joined")
    }
    connection.disconnect()
  }

  @Test("A refused connection throws the connection's error")
  func refusedConnectionThrows() async throws {
    let port = try closedPort()
    let connection = ChatConnection()

    await #expect(throws: ChatConnectionError.self, "nothing listens on that port") {
      try await withDeadline(
        .seconds(2), "connect(to:port:as:)",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await connection.connect(port: port, as: "alice")
      }
    }
  }

  @Test("A name that is taken throws .rejected with the server's line")
  func takenNameThrows() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")

    let error = await #expect(throws: ChatConnectionError.self) {
      try await withDeadline(
        .seconds(2), "connect(to:port:as:)",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await ChatConnection().connect(port: server.port, as: "bob")
      }
    }
    #expect(error == .rejected("! name taken: bob"))
    #expect(server.names == ["bob"])
    bob.connection.disconnect()
  }

  @Test("Cancelling the task disconnects and throws CancellationError")
  func cancellationDisconnects() async throws {
    // The listener never says welcome: only cancellation can end this connect.
    let silent = try SilentListener()
    let connection = ChatConnection()
    let connecting = Task {
      try await connection.connect(port: silent.port, as: "alice")
    }
    try await Task.sleep(for: .milliseconds(100))

    connecting.cancel()

    await #expect(throws: CancellationError.self, "the legacy .cancelled becomes CancellationError")
    {
      try await withDeadline(
        .seconds(2), "connect(to:port:as:) after the task was cancelled",
        hint: "nothing tells the legacy connection to stop: call disconnect() from "
          + "withTaskCancellationHandler's onCancel"
      ) {
        try await connecting.value
      }
    }
  }
}
