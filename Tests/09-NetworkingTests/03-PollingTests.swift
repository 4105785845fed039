import Foundation
import HTTPTestServer
import Testing
import WorkbookTesting

@testable import Networking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A server answering `path` with `answers`, one per request, and then never again: a
/// listener that leaves after them finds the next poll waiting (a request cancelled halfway,
/// never one cancelled as it completes, which FoundationNetworking does not always survive).
private func server(_ path: String, _ answers: [HTTPTestResponse]) throws -> HTTPTestServer {
  let server = try startedServer()
  server.route(path, answers + [.hang])
  return server
}

/// Every body of `poll(url, every: interval, session: session)` until the stream ends, and
/// the error it ended with; at most `count` bodies, and then the listener leaves, a moment
/// later. The tests that need several polls end them with a failing answer, rather than by
/// leaving while the next request is just being sent; the limit keeps a stream that does
/// not end (one that takes the failing answer for a body) from holding up the test.
private func bodiesUntilTheEnd(
  atMost count: Int, of url: URL, every interval: Duration, session: URLSession,
  within limit: Duration, _ operation: String
) async throws -> (bodies: [String], error: (any Error)?) {
  try await withDeadline(
    limit, operation, hint: "the stream never ends: finish it (throwing) when a poll fails"
  ) {
    var seen: [String] = []
    do {
      for try await body in poll(url, every: interval, session: session) {
        seen.append(body)
        if seen.count == count {
          try await Task.sleep(for: .milliseconds(30))
          break
        }
      }
      return (seen, nil)
    } catch {
      return (seen, error)
    }
  }
}

/// The first `count` bodies of `poll(url, every: interval, session: session)`, then the
/// listener leaves, a moment later: never just as the next request is being sent (which
/// FoundationNetworking does not always survive being cancelled at).
private func firstBodies(
  _ count: Int, of url: URL, every interval: Duration, session: URLSession,
  within limit: Duration = .seconds(2), _ operation: String,
  hint: String = "yield each body as it arrives; the stream gets nothing"
) async throws -> [String] {
  try await withDeadline(limit, operation, hint: hint) {
    var seen: [String] = []
    for try await body in poll(url, every: interval, session: session) {
      seen.append(body)
      if seen.count == count {
        try await Task.sleep(for: .milliseconds(30))
        break
      }
    }
    return seen
  }
}

/// The contract of `poll(_:every:session:)`, path by path, and the test that pins each cell
/// ("—": does not apply, and why).
///
/// | path | values, end | released | order, count | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | 2xx (200…299, 204 empty) | each body as UTF-8 text, whole (characters split between two reads included): `yieldsEachBody`, `everySuccessStatus`, `multibyteBody` | — (the stream goes on) | one value per poll, in the order of the polls, a slow answer included: `slowAnswerKeepsItsPlace`; none lost while the listener is busy (whether polling goes on meanwhile or waits for it): `busyListenerGetsEachBody` | first poll at once: `firstPollAtOnce`; an interval between polls, fractions of a second included: `subSecondInterval`; the wait suspends: `slowIntervalDoesNotBlock` |
/// | 3xx, 4xx, 5xx | throws `PollFailed(status)`, no body yielded: `serverErrorEnds`, `yieldsEachBody` | the session let go: `sessionReleased` | — (the stream ends) | — |
/// | refused | throws the session's `URLError`: `refusedEnds` | — (nothing was connected; the poller ends with the stream, as on a 500) | — (the stream ends) | — |
/// | listener breaks | no request after: `breakingStops` | the session let go: `sessionReleased` | — (nobody reads any more) | — |
/// | listener's task cancelled | the request in flight cancelled: `cancellingStopsTheRequest` | server sees the close; the session let go: `sessionReleased` | — (nobody reads any more) | — |
/// | listener leaves as a poll creates its data task (a legacy dataTask bridge) | that data task cancelled, or never resumed: `leavingAsAPollStarts` | — (an offline data task: no connection) | — (nobody reads any more) | the cancel inside the data task's creation, before the poll has it (`ScriptedSession.afterCreating`): `leavingAsAPollStarts` |
/// | two streams at once, one left | the other goes on polling: `twoStreamsAtOnce` | — (as one stream) | — (each stream has its own) | — |
/// | second listener of one stream | — (a stream has one listener) | — | — | — |
@Suite("9.3 Polling")
struct PollingTests {
  @Test("Polls now and then every interval, yielding each body")
  func yieldsEachBody() async throws {
    let server = try startedServer()
    server.route("/status", [.ok("green"), .ok("amber"), .ok("green"), .status(500, "down")])
    defer { server.stop() }
    // Not invalidated at the end: a poller that outlives its test would then trap
    // ("Session invalidated") instead of failing with a message.
    let session = makeSession()

    let (seen, error) = try await bodiesUntilTheEnd(
      atMost: 4, of: server.url("/status"), every: .milliseconds(5), session: session,
      within: .seconds(2), "three polls, then a 500")
    #expect(
      Array(seen.prefix(3)) == ["green", "amber", "green"],
      Comment(
        rawValue: "the server answered green, amber, green, and the stream yielded "
          + "\(Array(seen.prefix(3))): yield each response's body, as text, in the order of the "
          + "polls"))
    #expect(server.requests.count >= 4, "one request per poll")
    #expect(
      seen.count == 3 && error as? PollFailed == PollFailed(status: 500),
      Comment(
        rawValue: "after three bodies the server answered 500: a 500 is not a success, end the "
          + "stream with PollFailed(status: 500); the stream "
          + (seen.count > 3
            ? "yielded its body \"\(seen[3])\" instead"
            : "ended with \(String(describing: error)) instead")))
  }

  @Test("A listener busy with one body still gets each later one, in order")
  func busyListenerGetsEachBody() async throws {
    let server = try startedServer()
    server.route("/status", [.ok("green"), .ok("amber"), .ok("red"), .status(500, "down")])
    defer { server.stop() }
    let session = makeSession()

    // Read in a task of its own, without a deadline of its own: a stream that never ends
    // is another test's finding, and this one stops looking after four bodies.
    let url = server.url("/status")
    let read = Locked<(seen: [String], error: (any Error)?, ended: Bool)>(([], nil, false))
    let listener = Task {
      do {
        for try await body in poll(url, every: .milliseconds(5), session: session) {
          let count = read.withLock {
            $0.seen.append(body)
            return $0.seen.count
          }
          // Busy with the first body: until the server has answered every poll (a poller
          // that goes on meanwhile), or for a second (one that polls when asked).
          if count == 1 {
            _ = await eventually(within: .seconds(1)) { server.answered.count >= 4 }
          }
          if count == 4 { break }
        }
        read.withLock { $0.ended = true }
      } catch {
        read.withLock {
          $0.error = error
          $0.ended = true
        }
      }
    }
    _ = await eventually(within: .seconds(4)) { read.value.ended }
    listener.cancel()
    let (seen, error, ended) = read.value
    if !ended {
      Issue.record(
        Comment(
          rawValue: "a listener busy with the first body then read \(seen), and the stream had "
            + "not ended 4 seconds later, though the server's fourth answer was a 500"))
      return
    }
    #expect(
      seen == ["green", "amber", "red"],
      Comment(
        rawValue: "the server answered green, amber, red while the listener was busy with the "
          + "first, and the stream gave \(seen)"
          + (seen.count == 3 && Set(seen) == ["green", "amber", "red"]
            ? ": they came out of the order of the polls; yield each body in turn, in the "
              + "order of the polls (a task of its own per poll, or per body, runs in any order)"
            : "")
          + (Set(seen).isSubset(of: ["green", "amber", "red"]) && seen.count < 3
            ? ": bodies that came while the listener was busy were thrown away, which a "
              + "stream with a bounded buffer (.bufferingNewest, .bufferingOldest) does; the "
              + "old timer showed every answer, and each one must reach the listener"
            : "")))
    #expect(
      error as? PollFailed == PollFailed(status: 500),
      "after three bodies the server answered 500: the stream must end with PollFailed(status: 500), not \(String(describing: error))"
    )
  }

  @Test("A slow answer keeps its place: the bodies come in the order of the polls")
  func slowAnswerKeepsItsPlace() async throws {
    let server = try startedServer()
    server.route(
      "/status",
      [.slowHeaders(.milliseconds(200), "first"), .ok("second"), .ok("third"), .status(503)])
    defer { server.stop() }
    // Not invalidated at the end: a poller that outlives its test would then trap
    // ("Session invalidated") instead of failing with a message.
    let session = makeSession()

    let (seen, error) = try await bodiesUntilTheEnd(
      atMost: 4, of: server.url("/status"), every: .milliseconds(5), session: session,
      within: .seconds(3), "three polls, the first one slow, then a 503")
    #expect(
      seen == ["first", "second", "third"] && error as? PollFailed == PollFailed(status: 503),
      Comment(
        rawValue: "the first poll's answer took 200 ms, the next ones came at once, and the "
          + "stream yielded \(seen) and ended with \(String(describing: error)) instead of "
          + "[\"first\", \"second\", \"third\"] and PollFailed(status: 503): each body comes "
          + "out in the order of the polls, and the next poll waits for the answer to the one "
          + "before (polls started on their own, a task or a timer tick each, let a fast "
          + "answer overtake a slow one and pile requests up on a slow server)"))
  }

  @Test("A status outside 200…299 (a 3xx, a 4xx, a 5xx) ends the stream with PollFailed")
  func serverErrorEnds() async throws {
    let server = try startedServer(statusRoutes(failureStatuses))
    defer { server.stop() }
    // Not invalidated at the end: a poller that outlives its test would then trap
    // ("Session invalidated") instead of failing with a message.
    let session = makeSession()

    for code in failureStatuses {
      do {
        let body = try await withDeadline(
          .seconds(2), "polling a server that answers \(code)",
          hint: "the stream never ends: finish it (throwing) when a poll fails"
        ) { () async throws -> String? in
          let statuses = poll(
            server.url("/status/\(code)"), every: .milliseconds(5), session: session)
          for try await body in statuses { return body }
          return nil
        }
        Issue.record(
          Comment(
            rawValue: "the server answered \(code): a \(code) is not a success, end the stream "
              + "with PollFailed(status: \(code)) instead of "
              + (body.map { "yielding its body \"\($0)\"" } ?? "finishing without an error")
              + " (a 404 or a 304 is as much a failure as a 500)"))
      } catch let error as PollFailed {
        #expect(error == PollFailed(status: code), "throw the response's status code")
      }
    }
  }

  @Test("Every status from 200 to 299 is a success: its body is yielded")
  func everySuccessStatus() async throws {
    let server = try startedServer()
    for (path, answer) in statusRoutes(successStatuses) { server.route(path, [answer, .hang]) }
    defer { server.stop() }

    for code in successStatuses {
      // A session per stream: a poller that outlives its stream keeps a connection, and a
      // session opens only so many to one server.
      // Not invalidated at the end: a poller that outlives its test would then trap.
      let session = makeSession()
      let outcome = await Result {
        try await firstBodies(
          1, of: server.url("/status/\(code)"), every: .milliseconds(5), session: session,
          "the first poll of a server that answers \(code)")
      }
      switch outcome {
      case .success(let bodies):
        #expect(bodies == [statusBody(code)], "the server answered \(code): yield its body")
      case .failure(let error):
        if error is DeadlineExceeded { continue }
        Issue.record(
          Comment(
            rawValue: "the server answered \(code), and the stream threw \(error): every "
              + "status from 200 to 299 is a success (201 Created, 204 No Content…), not only "
              + "200"))
      }
    }
  }

  @Test("A body in UTF-8 comes out as the same text, accents and emoji included")
  func multibyteBody() async throws {
    let server = try server("/status", [.ok(multibyteText)])
    defer { server.stop() }
    let session = makeSession()

    let bodies = try await firstBodies(
      1, of: server.url("/status"), every: .milliseconds(5), session: session, "the first poll")
    #expect(
      bodies == [multibyteText],
      Comment(
        rawValue: "the server sent \"\(multibyteText)\" in UTF-8 and the stream yielded "
          + "\(bodies): decode the body as UTF-8, where é takes two bytes and 🌍 four, not one "
          + "character per byte"))

    // The same text in 8 pieces, 20 ms apart, three of which end inside a character.
    let split = try startedServer()
    split.route(
      "/split", [.slowBody(Array(multibyteText.utf8), pieces: 8, every: .milliseconds(20)), .hang])
    defer { split.stop() }
    let pieces = try await firstBodies(
      1, of: split.url("/split"), every: .milliseconds(5), session: session,
      "the first poll of a body sent in pieces")
    #expect(
      pieces == [multibyteText],
      Comment(
        rawValue: "the server sent \"\(multibyteText)\" in UTF-8, in pieces some of which end "
          + "in the middle of a character, and the stream yielded \(pieces): a body is one "
          + "text, decoded once it is whole; decoding each piece as it arrives cuts the "
          + "characters that straddle two pieces"))
  }

  @Test("The first poll goes out at once, not after one interval")
  func firstPollAtOnce() async throws {
    let server = try server("/status", [.ok("green")])
    defer { server.stop() }
    let session = makeSession()

    let bodies = try await firstBodies(
      1, of: server.url("/status"), every: .seconds(30), session: session,
      "the first poll, with an interval of 30 seconds",
      hint: "the first poll waited for the interval: the body is wanted now, and then every "
        + "interval; a screen that polls every minute would show nothing for a minute")
    #expect(bodies == ["green"], "yield the first body")
  }

  @Test("Polls are an interval apart, fractions of a second included")
  func subSecondInterval() async throws {
    let server = try startedServer()
    server.route("/status", [.ok("1"), .ok("2"), .ok("3"), .status(503)])
    defer { server.stop() }
    let session = makeSession()
    let interval = Duration.milliseconds(250)

    _ = try await bodiesUntilTheEnd(
      atMost: 4, of: server.url("/status"), every: interval, session: session,
      within: .seconds(4), "four polls, 250 ms apart")
    // However slow the machine, the polls come at least an interval apart: between a poll
    // and the one after the next, there is at least one whole interval.
    let times = server.arrivals.filter { $0.path == "/status" }.map(\.time)
    let gaps = zip(times, times.dropFirst(2)).map { $1 - $0 }
    #expect(
      times.count >= 3 && gaps.allSatisfy { $0 >= interval },
      Comment(
        rawValue: "with an interval of 250 ms, the server saw the polls \(describe(times)) "
          + "apart: the interval was not waited, so the server is polled in a tight loop; a "
          + "Duration of a quarter of a second is not zero seconds"))
  }

  @Test("A long interval suspends: no thread is held while polling waits")
  func slowIntervalDoesNotBlock() async throws {
    let server = try server("/status", [.ok("green"), .ok("green")])
    defer { server.stop() }
    let session = makeSession()

    // Longer than the pool check's patience (1.5 s), so a wait that blocks a thread of the
    // concurrency pool is seen doing so.
    let bodies = try await firstBodies(
      2, of: server.url("/status"), every: .seconds(2), session: session, within: .seconds(6),
      "two polls, 2 seconds apart")
    #expect(bodies == ["green", "green"], "yield each body")
  }

  @Test("Two streams at once: the one left behind goes on polling")
  func twoStreamsAtOnce() async throws {
    let server = try server("/a", [.ok("a")])
    server.route("/b", Array(repeating: .ok("b"), count: 6) + [.status(503)])
    defer { server.stop() }
    let session = makeSession()

    let second = Task {
      try await bodiesUntilTheEnd(
        atMost: 7, of: server.url("/b"), every: .milliseconds(20), session: session,
        within: .seconds(3), "six polls of /b while a stream of /a comes and goes")
    }
    let first = try await firstBodies(
      1, of: server.url("/a"), every: .milliseconds(20), session: session, "one poll of /a")
    #expect(first == ["a"], "yield the body of /a")
    let outcome = await Result { try await second.value }
    guard case .success(let (bodies, error)) = outcome else { return }
    if bodies == Array(repeating: "b", count: 6) {
      #expect(error as? PollFailed == PollFailed(status: 503), "then end with PollFailed")
    } else {
      Issue.record(
        Comment(
          rawValue: "two streams polled at once and the listener of the first one left; the "
            + "second then got \(bodies) and ended with \(String(describing: error)) instead of "
            + "six bodies and PollFailed(status: 503): each stream has its own polling, which "
            + "only its own listener stops"))
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
    // After the first answer, slow ones: a poll that goes on after the break is seen, and
    // a listener that leaves never finds a request just completing.
    let server = try startedServer()
    server.route("/status", [.ok("green"), .slowHeaders(.milliseconds(100), "green")])
    defer { server.stop() }
    // Not invalidated at the end: a poller that outlives its test would then trap
    // ("Session invalidated") instead of failing with a message.
    let session = makeSession()

    try await withDeadline(
      .seconds(2), "the first poll",
      hint: "yield each body as it arrives; the stream gets nothing"
    ) {
      for try await _ in poll(server.url("/status"), every: .milliseconds(5), session: session) {
        try await Task.sleep(for: .milliseconds(30))
        break
      }
    }
    // A correct answer sends no request after the break, however slow the machine; give a
    // poller that was not stopped the time for a few more polls to show itself.
    let before = server.requests.count
    try await Task.sleep(for: .milliseconds(400))
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

  @Test("A listener that leaves just as a poll creates its data task leaves no request running")
  func leavingAsAPollStarts() async throws {
    let server = try startedServer(["/status": .hang])
    defer { server.stop() }
    // Offline data tasks: nothing answers them, and only a cancel completes them.
    let session = ScriptedSession()
    let dataTask = Locked<OfflineDataTask?>(nil)
    session.offline.withLock { $0 = { task in dataTask.withLock { $0 = task } } }
    let listener = Locked<Task<Void, any Error>?>(nil)
    // Inside the poll, the moment its data task exists and before the poll has it in hand:
    // the listener leaves right there (its task cancelled, and with it the task that polls,
    // whichever it is).
    session.afterCreating.withLock {
      $0 = {
        listener.value?.cancel()
        withUnsafeCurrentTask { $0?.cancel() }
      }
    }

    let url = server.url("/status")
    let (go, open) = AsyncStream.makeStream(of: Void.self)
    let task = Task {
      for await _ in go { break }
      for try await _ in poll(url, every: .milliseconds(5), session: session) {}
    }
    listener.withLock { $0 = task }
    open.yield()
    _ = await eventually { session.created.value > 0 || server.requests.count > 0 }
    if session.created.value == 0 {
      // The polls do not go through the legacy dataTask(with:completionHandler:): nothing
      // was created to race (`cancellingStopsTheRequest` covers a request cancelled).
      task.cancel()
      _ = try? await withDeadline(
        .seconds(2), "polling after its task was cancelled",
        hint: "the stream never ends once nobody listens: cancel the polling from onTermination"
      ) {
        try await task.value
      }
      return
    }
    _ = try? await withDeadline(
      .seconds(2), "polling after its listener left as a poll began",
      hint: "the stream never ends once nobody listens: cancel the polling from onTermination"
    ) {
      try await task.value
    }
    // A data task that was never resumed sent nothing; one that was must be cancelled.
    let cancelled = await eventually(within: .milliseconds(500)) {
      dataTask.value?.isCompleted ?? false
    }
    let resumed = dataTask.value != nil
    #expect(
      cancelled || !resumed,
      Comment(
        rawValue: "the listener left just as a poll had created its data task, before the "
          + "poll had it in hand, and that data task was resumed and never cancelled: the "
          + "cancel was lost, because it came when there was no data task to cancel yet and "
          + "nothing looked for it afterwards; the request goes out with nobody listening, "
          + "and on a server that never answers it holds its connection (and the poll) "
          + "forever"))
    // Let the stuck poll end, so that it holds nothing after the test.
    dataTask.value?.cancel()
  }

  @Test("Once the stream is over, nothing holds the session any more")
  func sessionReleased() async throws {
    let server = try server("/ok", [.ok("green")])
    server.route("/broken", .status(500))
    server.route("/hang", .hang)
    defer { server.stop() }

    for (path, ending) in [
      ("/ok", "the listener left"), ("/broken", "the poll failed"),
      ("/hang", "the listener's task was cancelled"),
    ] {
      let weakSession = WeakReference<URLSession>()
      do {
        let session = makeSession()
        weakSession.object = session
        let stream = poll(server.url(path), every: .milliseconds(5), session: session)
        if path == "/hang" {
          let listener = Task { for try await _ in stream {} }
          _ = await requestArrived(server, path)
          listener.cancel()
          _ = await listener.result
        } else {
          _ = await Result {
            try await withDeadline(
              .seconds(2), "the first poll of \(path)",
              hint: "the stream never ends: finish it (throwing) when a poll fails"
            ) {
              for try await _ in stream {
                try await Task.sleep(for: .milliseconds(30))
                break
              }
            }
          }
        }
      }
      #expect(
        await eventually { weakSession.object == nil },
        Comment(
          rawValue: "\(ending) and the stream is over, but something still holds the session: "
            + "the polling still runs, or keeps what it used; a stream nobody listens to "
            + "must let go of everything"))
    }
  }
}

/// A weak reference a test can keep across `await`s.
final class WeakReference<Object: AnyObject>: @unchecked Sendable {
  // @unchecked: `object` is only read and written by the test's own task.
  weak var object: Object?
}

/// "12 ms, 3 ms": how far apart each instant is from the one two places later.
private func describe(_ times: [ContinuousClock.Instant]) -> String {
  zip(times, times.dropFirst(2)).map { pair in
    "\(Int((pair.1 - pair.0) / .milliseconds(1))) ms"
  }.joined(separator: ", ")
}
