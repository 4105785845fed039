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

/// What `collect` saw: the lines, and how the stream ended (nil: it had not ended).
private struct Collected {
  var lines: [String] = []
  var end: Result<Void, any Error>?
  /// True once `done` held for the lines: nothing more to wait for.
  var complete = false
}

/// The lines `lines` yields until `done` holds for them, the stream ends, or `limit` passes,
/// whichever comes first: a stream that loses lines ends the wait with what it kept. A
/// stream that yields nothing and does not end is recorded as never resumed, naming `what`
/// and the likely cause.
private func collect(
  _ what: String, from lines: AsyncThrowingStream<String, any Error>,
  within limit: Duration = .seconds(2),
  sourceLocation: SourceLocation = #_sourceLocation,
  until done: @escaping @Sendable ([String]) -> Bool
) async -> Collected {
  let seen = Locked(Collected())
  let reader = Task {
    do {
      for try await line in lines {
        if seen.withLock({
          $0.lines.append(line)
          $0.complete = done($0.lines)
          return $0.complete
        }) {
          return
        }
      }
      seen.withLock { $0.end = .success(()) }
    } catch {
      seen.withLock { $0.end = .failure(error) }
    }
  }
  _ = await eventually(within: limit) {
    let collected = seen.value
    return collected.complete || collected.end != nil
  }
  reader.cancel()
  let collected = seen.value
  if collected.lines.isEmpty && collected.end == nil {
    Issue.record(
      Comment(
        rawValue: "\(neverResumedMarker) \(what) did not arrive within 2 seconds. Likely cause: "
          + "didReceive never yields into the stream: set the delegate, and keep it alive (the "
          + "connection holds it weakly: let the stream's onTermination closure capture it)."),
      sourceLocation: sourceLocation)
  }
  return collected
}

/// Records a failure if the stream ended with an error while the connection was open.
private func expectNoError(
  _ collected: Collected, sourceLocation: SourceLocation = #_sourceLocation
) {
  if case .failure(let error) = collected.end {
    Issue.record(
      Comment(rawValue: "the stream ended with \(error) while the connection was still open"),
      sourceLocation: sourceLocation)
  }
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

    let collected = await collect("the first 4 lines of incomingLines()", from: lines) {
      $0.count == 4
    }
    let received = collected.lines

    expectNoError(collected)
    if !received.isEmpty {
      #expect(
        received == ["* bob joined", "bob: one", "bob: two", "bob: three"],
        Comment(
          rawValue:
            "lines were lost or came out of order: yield every line as it arrives, and keep "
            + "every line until it is read (the default buffering policy, .unbounded)"))
    }
  }

  @Test("Lines that arrive before anyone iterates are all kept, in order")
  func burstIsKept() async throws {
    let greeting = (1...5).map { "* rule \($0)" }
    let server = try startedServer(greeting: greeting)
    defer { server.stop() }
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    try await legacyConnect(connection, port: server.port, name: "alice")
    // The greeting came with the welcome: it is in the stream before anyone iterates.
    await callbacksDelivered(connection)
    connection.disconnect()

    let collected = await collect("the server's greeting", from: lines) { _ in false }
    let received = collected.lines

    if case .failure(let error) = collected.end {
      Issue.record(
        Comment(
          rawValue: "after disconnect() the stream must finish without an error (a nil error "
            + "is a normal end: finish(throwing: nil)), but it threw \(error)"))
    }
    if !received.isEmpty {
      #expect(
        received == greeting,
        Comment(
          rawValue:
            "lines were lost before anyone iterated: a stream must keep every line until it is "
            + "read (the default buffering policy, .unbounded), not only the newest or oldest"))
    }
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

    let collected = await collect("the first 2 lines of incomingLines()", from: lines) {
      $0.count == 2
    }
    let received = collected.lines

    expectNoError(collected)
    if !received.isEmpty {
      #expect(
        received == ["* bob joined", "bob: still there?"],
        "lines were lost or came out of order")
    }
  }

  @Test("When the server goes away, iteration ends with its error")
  func serverLossThrows() async throws {
    let server = try startedServer()
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    try await legacyConnect(connection, port: server.port, name: "alice")

    server.stop()

    let error = await #expect(
      throws: ChatConnectionError.self,
      Comment(
        rawValue: "when the server goes away the stream must finish with its error "
          + "(finish(throwing: error)), not as if we had hung up")
    ) {
      try await withDeadline(
        .seconds(2), "iterating incomingLines() after the server stopped",
        hint: "didDisconnectWithError never finishes the stream"
      ) {
        try await first(100, of: lines)
      }
    }
    #expect(error == .closedByServer, "finish with the connection's own error, unchanged")
  }

  @Test("After disconnect(), iteration ends without an error")
  func disconnectFinishesCleanly() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    let lines = connection.incomingLines()
    try await legacyConnect(connection, port: server.port, name: "alice")

    connection.disconnect()

    do {
      let received = try await withDeadline(
        .seconds(2), "iterating incomingLines() after disconnect()",
        hint: "didDisconnectWithError(nil) never finishes the stream"
      ) {
        try await first(100, of: lines)
      }
      #expect(received.isEmpty)
    } catch is DeadlineExceeded {
      // Recorded as never resumed.
    } catch {
      Issue.record(
        Comment(
          rawValue: "after disconnect() the stream must finish without an error (a nil error "
            + "is a normal end: finish(throwing: nil)), but it threw \(error)"))
    }
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
    await eventually(
      "alice to leave once nobody listens to her lines: disconnect() in the stream's "
        + "onTermination"
    ) {
      bob.recorder.lines.value.contains("* alice left")
    }
  }
}
