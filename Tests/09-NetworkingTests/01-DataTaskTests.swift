import Foundation
import HTTPTestServer
import Testing
import WorkbookTesting

@testable import Networking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("9.1 Data task")
struct DataTaskTests {
  @Test("fetch(_:) returns the body of a 200")
  func returnsTheBody() async throws {
    let server = try startedServer(["/quote": .ok("Simple is better than complex.")])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    let data = try await withDeadline(
      .seconds(2), "fetch(\"/quote\")",
      hint: "the completion's success path never resumes the continuation"
    ) {
      try await client.fetch("/quote")
    }
    #expect(
      String(decoding: data, as: UTF8.self) == "Simple is better than complex.",
      "return the completion's data, unchanged")
  }

  @Test("fetch(_:) waits for headers that come late")
  func slowHeaders() async throws {
    let server = try startedServer(["/late": .slowHeaders(.milliseconds(150), "late")])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    let data = try await withDeadline(
      .seconds(2), "fetch(\"/late\")",
      hint: "the completion's success path never resumes the continuation"
    ) {
      try await client.fetch("/late")
    }
    #expect(String(decoding: data, as: UTF8.self) == "late", "return the completion's data")
  }

  @Test("A 500 or a 404 throws BadStatus with the code")
  func badStatusThrows() async throws {
    let server = try startedServer([
      "/broken": .status(500, "internal error"), "/missing": .status(404, "not found"),
    ])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    for (path, code) in [("/broken", 500), ("/missing", 404)] {
      let error = await #expect(
        throws: BadStatus.self,
        Comment(
          rawValue: "the server answered \(code): a \(code) is not a success, throw "
            + "BadStatus(code: \(code)) (the legacy completion reports it as a response, "
            + "with no error, so check response.statusCode)")
      ) {
        try await withDeadline(
          .seconds(2), "fetch(\"\(path)\")",
          hint: "the path for a status that is not 2xx never resumes the continuation"
        ) {
          try await client.fetch(path)
        }
      }
      #expect(error == BadStatus(code: code), "throw BadStatus with the response's status code")
    }
  }

  @Test("A connection dropped mid-body throws the session's error")
  func droppedConnectionThrows() async throws {
    let server = try startedServer(["/dropped": .dropped(payload(4000), after: 1000)])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    let error = await #expect(
      throws: (any Error).self,
      Comment(
        rawValue: "the server dropped the connection after 1000 of 4000 bytes: fetch must "
          + "throw the session's error: was the completion's error swallowed?")
    ) {
      try await withDeadline(
        .seconds(2), "fetch(\"/dropped\")",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await client.fetch("/dropped")
      }
    }
    #expect(
      error is URLError,
      "throw the session's own error (a URLError) for a dropped connection, not \(String(describing: error))"
    )
  }

  @Test("A truncated body throws instead of returning part of it")
  func truncatedBodyThrows() async throws {
    let server = try startedServer(["/short": .truncated(payload(4000), after: 1000)])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    await #expect(
      throws: (any Error).self,
      Comment(
        rawValue: "the server announced 4000 bytes and sent 1000: fetch must throw the "
          + "session's error: was the completion's error swallowed?")
    ) {
      try await withDeadline(
        .seconds(2), "fetch(\"/short\")",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await client.fetch("/short")
      }
    }
  }

  @Test("Cancelling the task cancels the data task: the server sees the connection close")
  func cancellationReachesTheServer() async throws {
    let server = try startedServer(["/hang": .hang])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    let task = Task { try await client.fetch("/hang") }
    #expect(await requestArrived(server, "/hang"), "fetch(_:) should have sent the request")
    task.cancel()

    await #expect(
      throws: CancellationError.self,
      Comment(
        rawValue: "the task was cancelled, so fetch must throw CancellationError: turn the "
          + "session's URLError(.cancelled) into CancellationError")
    ) {
      try await withDeadline(
        .seconds(2), "fetch(\"/hang\") after cancel",
        hint: "cancelling the task must cancel the URLSessionDataTask: call its cancel() "
          + "from withTaskCancellationHandler's onCancel, so its completion runs"
      ) {
        try await task.value
      }
    }
    let closed = await eventually { server.abandoned.contains("/hang") }
    #expect(
      closed,
      Comment(
        rawValue: "the data task kept running after cancellation: the server never saw the "
          + "connection close; cancelling must reach the URLSessionDataTask (task.cancel())"))
  }

  @Test("A task cancelled before it calls fetch(_:) throws CancellationError")
  func alreadyCancelled() async throws {
    let server = try startedServer(["/hang": .hang])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    let task = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await client.fetch("/hang")
    }
    await #expect(
      throws: CancellationError.self,
      Comment(
        rawValue: "the task was already cancelled when it called fetch(\"/hang\"): onCancel "
          + "runs at once, before the data task exists, so remember the cancel and cancel "
          + "the data task as soon as it is created")
    ) {
      try await withDeadline(
        .seconds(2), "fetch(\"/hang\") in a cancelled task",
        hint: "onCancel ran before the data task existed and the cancel was lost: remember "
          + "it and cancel the data task once it is created"
      ) {
        try await task.value
      }
    }
  }
}
