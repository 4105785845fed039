import Foundation
import HTTPTestServer
import Testing
import WorkbookTesting

@testable import Networking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private func inbox(
  _ server: HTTPTestServer, center: NotificationCenter = NotificationCenter()
) -> InboxClient {
  InboxClient(baseURL: server.url("/"), session: makeSession(), notificationCenter: center)
}

@Suite("9.5 The whole module")
struct InboxTests {
  @Test("unreadCount() returns the count")
  func countReturns() async throws {
    let server = try startedServer(["/unread": .ok("7\n")])
    defer { server.stop() }
    let count = try await withDeadline(
      .seconds(2), "unreadCount()", hint: "the success path never returns"
    ) {
      try await inbox(server).unreadCount()
    }
    #expect(count == 7, "return the count the server sent")
  }

  @Test("unreadCount() throws InboxError for a 500 and for a body that is not a count")
  func countErrors() async throws {
    let server = try startedServer(["/unread": .status(500, "internal error")])
    defer { server.stop() }
    let client = inbox(server)

    let error = await #expect(
      throws: InboxError.self,
      Comment(
        rawValue: "the server answered 500: a 500 is not a success, throw InboxError.status(500)")
    ) {
      try await withDeadline(.seconds(2), "unreadCount() of a 500") {
        try await client.unreadCount()
      }
    }
    #expect(
      error == .status(500),
      "the server answered 500: a 500 is not a success, throw InboxError.status(500)")

    server.route("/unread", .ok("many"))
    let other = await #expect(throws: InboxError.self, "a body that is not a number is an error") {
      try await withDeadline(.seconds(2), "unreadCount() of \"many\"") {
        try await client.unreadCount()
      }
    }
    #expect(other == .notACount("many"), "throw InboxError.notACount with the body")
  }

  @Test("Cancelling unreadCount() cancels the request and throws CancellationError")
  func countCancels() async throws {
    let server = try startedServer(["/unread": .hang])
    defer { server.stop() }
    let client = inbox(server)

    let task = Task { try await client.unreadCount() }
    #expect(await requestArrived(server, "/unread"), "unreadCount() should send its request")
    task.cancel()
    await #expect(
      throws: CancellationError.self,
      Comment(
        rawValue: "the task was cancelled: throw CancellationError (turn the session's "
          + "URLError(.cancelled) into it)")
    ) {
      try await withDeadline(
        .seconds(2), "unreadCount() after cancel",
        hint: "cancelling the task must cancel the request"
      ) {
        try await task.value
      }
    }
    #expect(
      await eventually { server.abandoned.contains("/unread") },
      "the request kept running after cancellation: the server never saw the connection close")
  }

  @Test("unreadCounts(every:) yields the count, then only changes, and posts each change")
  func countsYieldChanges() async throws {
    let server = try startedServer(["/unread": .ok("3")])
    defer { server.stop() }
    let center = NotificationCenter()
    let posted = Locked<[Int]>([])
    let observer = center.addObserver(
      forName: .inboxUnreadCountDidChange, object: nil, queue: nil
    ) { note in
      if let count = note.userInfo?["count"] as? Int { posted.withLock { $0.append(count) } }
    }
    defer { center.removeObserver(observer) }
    let client = inbox(server, center: center)

    let seen = try await withDeadline(
      .seconds(2), "the first two counts of unreadCounts(every:)",
      hint: "yield the count when it changes"
    ) {
      var seen: [Int] = []
      for try await count in client.unreadCounts(every: .milliseconds(5)) {
        seen.append(count)
        if seen.count == 1 {
          // Let a few polls see the same count before it changes.
          let polls = server.requests.count
          _ = await eventually { server.requests.count >= polls + 3 }
          server.route("/unread", .ok("5"))
        }
        if seen.count == 2 { break }
      }
      return seen
    }
    #expect(
      seen == [3, 5],
      "yield only changes: the count was 3 for several polls, then 5; got \(seen)")
    #expect(
      await eventually { posted.value == [3, 5] },
      Comment(
        rawValue: "the old observers of .inboxUnreadCountDidChange heard \(posted.value): post "
          + "each change, with userInfo[\"count\"], as startWatching does"))
  }

  @Test("unreadCounts(every:) stops polling when nobody listens")
  func countsStop() async throws {
    let server = try startedServer(["/unread": .ok("3")])
    defer { server.stop() }
    let client = inbox(server)

    try await withDeadline(.seconds(2), "the first count", hint: "yield the first count") {
      for try await _ in client.unreadCounts(every: .milliseconds(5)) { break }
    }
    let before = server.requests.count
    try await Task.sleep(for: .milliseconds(100))
    #expect(
      server.requests.count <= before + 1,
      Comment(
        rawValue: "it kept polling after nobody listened: \(server.requests.count - before) "
          + "requests after the loop ended; stop polling from the stream's onTermination"))
  }

  @Test("unreadCounts(every:) ends with the error of a failed poll")
  func countsEndOnError() async throws {
    let server = try startedServer(["/unread": .status(503)])
    defer { server.stop() }
    let client = inbox(server)

    await #expect(
      throws: InboxError.status(503),
      "the server answered 503: end the stream with InboxError.status(503)"
    ) {
      try await withDeadline(
        .seconds(2), "unreadCounts(every:) of a failing server",
        hint: "the stream never ends: finish it (throwing) when a poll fails"
      ) {
        for try await _ in client.unreadCounts(every: .milliseconds(5)) {}
      }
    }
  }
}
