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

@Suite("8.2 Incoming messages")
struct IncomingMessagesTests {
  @Test("Every line after the welcome arrives, in order")
  func linesArriveInOrder() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    try await legacyConnect(connection, port: server.port, name: "alice")
    let bob = try await join(server, as: "bob")
    for text in ["one", "two", "three"] { try await bob.say(text) }

    let received = try await withDeadline(
      .seconds(2), "the first 4 lines of incomingLines()",
      hint: "didReceive never yields into the stream: set the delegate, and keep it alive"
    ) {
      try await first(4, of: lines)
    }

    #expect(received == ["* bob joined", "bob: one", "bob: two", "bob: three"])
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

    let received = try await withDeadline(
      .seconds(2), "the first 2 lines of incomingLines()",
      hint: "the connection holds its delegate weakly: let the stream's onTermination "
        + "closure capture it, or nothing keeps it alive"
    ) {
      try await first(2, of: lines)
    }

    #expect(received == ["* bob joined", "bob: still there?"])
  }

  @Test("When the server goes away, iteration ends with its error")
  func serverLossThrows() async throws {
    let server = try startedServer()
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    try await legacyConnect(connection, port: server.port, name: "alice")

    server.stop()

    let error = await #expect(throws: ChatConnectionError.self, "losing the server is an error") {
      try await withDeadline(
        .seconds(2), "iterating incomingLines() after the server stopped",
        hint: "didDisconnectWithError never finishes the stream"
      ) {
        try await first(100, of: lines)
      }
    }
    #expect(error == .closedByServer)
  }

  @Test("After disconnect(), iteration ends without an error")
  func disconnectFinishesCleanly() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    try await legacyConnect(connection, port: server.port, name: "alice")

    connection.disconnect()

    let received = try await withDeadline(
      .seconds(2), "iterating incomingLines() after disconnect()",
      hint: "didDisconnectWithError(nil) never finishes the stream"
    ) {
      try await first(100, of: lines)
    }
    #expect(received.isEmpty)
  }

  @Test("Stopping the iteration disconnects: the server sees us leave")
  func stoppingDisconnects() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let connection = ChatConnection()

    let received = try await withDeadline(
      .seconds(2), "the first line of incomingLines()",
      hint: "didReceive never yields into the stream"
    ) {
      let lines = connection.incomingLines()
      try await legacyConnect(connection, port: server.port, name: "alice")
      try await bob.say("hi")
      return try await first(1, of: lines)  // then the loop breaks and the stream goes away
    }

    #expect(received == ["bob: hi"])
    await eventually("alice to leave once nobody listens to her lines (onTermination)") {
      bob.recorder.lines.value.contains("* alice left")
    }
  }
}
