import Foundation
import HTTPTestServer
import Testing
import WorkbookTesting

@testable import Networking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("9.3 Polling")
struct PollingTests {
  @Test("Polls now and then every interval, yielding each body")
  func yieldsEachBody() async throws {
    let server = try startedServer(["/status": .ok("green")])
    defer { server.stop() }
    // Not invalidated at the end: a poller that outlives its test would then trap
    // ("Session invalidated") instead of failing with a message.
    let session = makeSession()

    let seen = try await withDeadline(
      .seconds(2), "the first three polls",
      hint: "yield each body as it arrives; the stream gets nothing"
    ) {
      var seen: [String] = []
      for try await status in poll(server.url("/status"), every: .milliseconds(5), session: session)
      {
        seen.append(status)
        if seen.count == 3 { break }
      }
      return seen
    }
    #expect(seen == ["green", "green", "green"], "yield each response's body, as text")
    #expect(server.requests.count >= 3, "one request per poll")
  }

  @Test("A 500 ends the stream with PollFailed")
  func serverErrorEnds() async throws {
    let server = try startedServer(["/status": .status(500, "internal error")])
    defer { server.stop() }
    // Not invalidated at the end: a poller that outlives its test would then trap
    // ("Session invalidated") instead of failing with a message.
    let session = makeSession()

    do {
      let body = try await withDeadline(
        .seconds(2), "polling a server that answers 500",
        hint: "the stream never ends: finish it (throwing) when a poll fails"
      ) { () async throws -> String? in
        let statuses = poll(server.url("/status"), every: .milliseconds(5), session: session)
        for try await body in statuses { return body }
        return nil
      }
      Issue.record(
        Comment(
          rawValue: "the server answered 500: a 500 is not a success, end the stream with "
            + "PollFailed(status: 500) instead of "
            + (body.map { "yielding its body \"\($0)\"" } ?? "finishing without an error")))
    } catch let error as PollFailed {
      #expect(error == PollFailed(status: 500), "throw the response's status code")
    }
  }

  @Test("A refused connection ends the stream with the session's error")
  func refusedEnds() async throws {
    let server = try startedServer()
    let url = server.url("/status")
    server.stop()
    // Wait until nothing listens on that port any more.
    _ = await eventually { server.openConnections == 0 }
    // Not invalidated at the end: a poller that outlives its test would then trap
    // ("Session invalidated") instead of failing with a message.
    let session = makeSession()

    await #expect(
      throws: URLError.self,
      Comment(rawValue: "nothing listens there: the stream must throw the session's error")
    ) {
      try await withDeadline(
        .seconds(2), "polling a server that is gone",
        hint: "the stream never ends: finish it (throwing) when a poll fails"
      ) {
        for try await _ in poll(url, every: .milliseconds(5), session: session) {}
      }
    }
  }

  @Test("Breaking out of the loop stops polling: no request after that")
  func breakingStops() async throws {
    let server = try startedServer(["/status": .ok("green")])
    defer { server.stop() }
    // Not invalidated at the end: a poller that outlives its test would then trap
    // ("Session invalidated") instead of failing with a message.
    let session = makeSession()

    try await withDeadline(
      .seconds(2), "the first poll",
      hint: "yield each body as it arrives; the stream gets nothing"
    ) {
      for try await _ in poll(server.url("/status"), every: .milliseconds(5), session: session) {
        break
      }
    }
    // A correct answer sends no request after the break, however slow the machine; give a
    // timer that was not stopped twenty intervals to show itself.
    let before = server.requests.count
    try await Task.sleep(for: .milliseconds(100))
    #expect(
      server.requests.count <= before + 1,
      Comment(
        rawValue: "it kept polling after nobody listened: \(server.requests.count - before) "
          + "requests after the loop ended; stop the timer (or the loop) from the stream's "
          + "onTermination"))
  }

  @Test("Cancelling the listening task cancels the request in flight")
  func cancellingStopsTheRequest() async throws {
    let server = try startedServer(["/status": .hang])
    defer { server.stop() }
    // Not invalidated at the end: a poller that outlives its test would then trap
    // ("Session invalidated") instead of failing with a message.
    let session = makeSession()

    let listener = Task {
      for try await _ in poll(server.url("/status"), every: .milliseconds(5), session: session) {}
    }
    #expect(await requestArrived(server, "/status"), "the first poll should have been sent")
    listener.cancel()
    _ = try? await withDeadline(
      .seconds(2), "polling after its task was cancelled",
      hint: "the stream never ends once nobody listens: cancel the polling from onTermination"
    ) {
      try await listener.value
    }
    let closed = await eventually { server.abandoned.contains("/status") }
    #expect(
      closed,
      Comment(
        rawValue: "it kept polling after nobody listened: the request in flight was never "
          + "cancelled (the server never saw its connection close)"))
  }
}
