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

  @Test("connect(to:port:as:) suspends while it waits, leaving its thread free for the welcome")
  func connectSuspends() async throws {
    let server = try startedServer()
    defer { server.stop() }
    // The completion runs on the caller's one thread, behind it, as on the main queue.
    let executor = OneThreadExecutor()
    let connection = ChatConnection(callbacksVia: executor.schedule)
    defer { connection.disconnect() }

    try await withDeadline(
      .seconds(2), "connect(to:port:as:)",
      hint: "the completion's success path (error == nil) never resumes the continuation",
      on: executor
    ) {
      try await connection.connect(port: server.port, as: "alice")
    }
    #expect(server.names == ["alice"], "alice should have joined the chat")
  }

  @Test("A refused connection throws the connection's error")
  func refusedConnectionThrows() async throws {
    let port = try closedPort()
    let connection = ChatConnection()

    await #expect(
      throws: ChatConnectionError.self,
      Comment(
        rawValue: "nothing listens on that port, so connecting must throw the connection's error: "
          + "was the completion's error swallowed (resume() instead of resume(throwing:))?")
    ) {
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

    let error = await #expect(
      throws: ChatConnectionError.self,
      Comment(
        rawValue: "the name is taken, so connecting must throw the connection's error: was the "
          + "completion's error swallowed?")
    ) {
      try await withDeadline(
        .seconds(2), "connect(to:port:as:)",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await ChatConnection().connect(port: server.port, as: "bob")
      }
    }
    #expect(
      error == .rejected("! name taken: bob"), "throw the connection's own error, unchanged")
    #expect(server.names == ["bob"])
    bob.connection.disconnect()
  }

  @Test("A cancel that lands while the welcome resumes the connect does not deadlock")
  func cancelDuringResume() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    defer { connection.disconnect() }

    // The task is cancelled from another thread while the welcome's completion is still
    // inside its resume: returning (joined) and throwing CancellationError are both fine.
    do {
      try await withCancellationRacingResume(
        .seconds(2), "connect(to:port:as:)",
        hint: "the completion's success path (error == nil) never resumes the continuation"
      ) {
        try await connection.connect(port: server.port, as: "alice")
      }
    } catch is CancellationError {
      // Cancelled in time: fine.
    } catch is DeadlineExceeded {
      // Recorded as never resumed.
    }
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

    await #expect(
      throws: CancellationError.self,
      Comment(
        rawValue:
          "a cancelled connect must throw CancellationError: turn the legacy .cancelled into "
          + "CancellationError()")
    ) {
      try await withDeadline(
        .seconds(2), "connect(to:port:as:) after the task was cancelled",
        hint: "nothing tells the legacy connection to stop: call disconnect() from "
          + "withTaskCancellationHandler's onCancel"
      ) {
        try await connecting.value
      }
    }
    await eventually(
      "the connection to hang up once the task was cancelled: cancelling must reach the "
        + "socket, so call disconnect() in onCancel (resuming the continuation alone leaves "
        + "the connection open)"
    ) {
      silent.peerHungUp()
    }
    // The legacy completion (with .cancelled) has run once this returns: a second resume
    // of the continuation would crash here, inside this test.
    await callbacksDelivered(connection)
  }
}
