import Foundation
import HTTPTestServer
import Testing
import WorkbookTesting

@testable import Networking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private func inbox(
  _ server: HTTPTestServer, center: NotificationCenter = NotificationCenter(),
  session: URLSession = makeSession()
) -> InboxClient {
  InboxClient(baseURL: server.url("/"), session: session, notificationCenter: center)
}

/// The counts posted as `.inboxUnreadCountDidChange` on a center of its own, in the order the
/// observers heard them (the center, and its observer, go with this object).
private final class Observers: Sendable {
  let center = NotificationCenter()
  private let heard = Locked<[Int]>([])

  /// `slowly`, when set, runs in the observer before it records a count, on the posting
  /// thread: an old screen that takes its time.
  init(slowly: (@Sendable (Int) -> Void)? = nil) {
    _ = center.addObserver(
      forName: .inboxUnreadCountDidChange, object: nil, queue: nil
    ) { [heard] note in
      guard let count = note.userInfo?["count"] as? Int else { return }
      slowly?(count)
      heard.withLock { $0.append(count) }
    }
  }

  var counts: [Int] { heard.value }
}

/// The first `count` values of `stream`, then the listener leaves.
private func first(
  _ count: Int, of stream: AsyncThrowingStream<Int, any Error>, _ operation: String,
  within limit: Duration = .seconds(2), hint: String = "yield the count when it changes"
) async throws -> [Int] {
  try await withDeadline(limit, operation, hint: hint) {
    var seen: [Int] = []
    for try await value in stream {
      seen.append(value)
      if seen.count == count { break }
    }
    return seen
  }
}

/// The contract of `InboxClient`'s async face, path by path, and the test that pins each
/// cell ("—": does not apply, and why).
///
/// `unreadCount()`:
///
/// | path | result / error | released | thread, timing |
/// | --- | --- | --- | --- |
/// | 2xx | the count, the spaces and newlines around it ignored: `countReturns`, `countStatuses` | — (a complete answer) | suspends while the answer is slow: `slowCountDoesNotBlock` |
/// | 3xx, 4xx, 5xx; not a number (UTF-8 text kept) | `InboxError.status`, `.notACount(text)`: `countErrors`, `countStatuses`; an empty 2xx body (a 204) or blanks are no count, and `.notACount` carries the body as received, untrimmed: `notACountCarriesTheBody`; a refused connection, the session's `URLError`: `countErrors` | — (a complete answer) | — (as a 2xx) |
/// | cancel before the call | `CancellationError`, no request left open: `countAlreadyCancelled` | the server has no open connection: `countAlreadyCancelled` | — |
/// | cancel while the request is created | `CancellationError`: `countCancelledWhileCreating` | — (offline data task) | — |
/// | cancel in flight | `CancellationError`: `countCancels` | server sees the close: `countCancels` | — |
/// | cancel as the answer arrives | — (URLSession's own `data(from:)` may return it, as the hints' answer does) | — | — |
/// | the old `unreadCount(completion:)`: a 5xx, not a number, refused | its completion, once, with `InboxError.status`, `.notACount`, the session's `URLError`: `oldCountReportsFailures` | — | — |
/// | the old watcher: `stopWatching()` | no poll starts after it: `stopWatchingStopsPolling` | — | — |
/// | two calls at once, one cancelled; a call after a cancel | each its own outcome: `callsDoNotShareState` | — (as one call) | — |
///
/// `unreadCounts(every:)`:
///
/// | path | values, end | released | order, count | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | counts | the count, then each change: `countsYieldChanges`; in the order of the polls, a slow answer included: `countsKeepTheirOrder` | — (the stream goes on) | each change posted: `countsYieldChanges`; 2.5 s between polls, no thread held meanwhile: `waitsBetweenPollsWithoutBlocking` (a `Thread.sleep` between polls: caught by hand, but one runner run of two passed it, so not catalogued); in the order of the polls: `countsKeepTheirOrder`; one post after the other (never one beside a slow observer's): `observersHearEachChangeInOrder`; a slow listener still gets every change the observers heard, none dropped: `slowListenerGetsEveryChange` | first poll at once: `countsFirstPollAtOnce`; an interval apart, fractions included: `countsSubSecondInterval`, and while the count stays the same: `unchangedCountWaitsTheInterval` |
/// | a failed poll | ends with its error: `countsEndOnError`, `countsKeepTheirOrder`; the session's error too (a dropped connection), not retried: `countsEndOnSessionError` | the client let go: `clientReleased` | — (the stream ends) | — |
/// | listener leaves (breaks, or its task is cancelled mid-poll) | polling stops: `countsStop`, `countsStopWhenCancelledMidPoll`; the poll in flight cancelled: `countsStopWhenCancelledMidPoll` | the client let go: `clientReleased` (both ways); the old watcher goes on: `legacyWatcherOutlivesAListener` | — (nobody reads any more) | — |
/// | a second listener, or one while the old watcher runs | gets the current count first: `secondListenerGetsTheCount`; the first listener's stream goes on: `secondStreamLeavesTheFirst` | — (as one listener) | a change is posted once, however many listeners: `secondListenerGetsTheCount`; two streams seeing it at the same instant: `oneChangeOnePost` (aimed race) | — |
@Suite("9.5 The whole module")
struct InboxTests {
  @Test("unreadCount() returns the count")
  func countReturns() async throws {
    let server = try startedServer(["/unread": .ok("7\n")])
    defer { server.stop() }
    let outcome = await Result {
      try await withDeadline(
        .seconds(2), "unreadCount()", hint: "the success path never returns"
      ) {
        try await inbox(server).unreadCount()
      }
    }
    switch outcome {
    case .success(let count):
      #expect(count == 7, "return the count the server sent")
    case .failure(let error as InboxError):
      Issue.record(
        Comment(
          rawValue: "the server answered 200 with \"7\\n\" (a count and a newline), and "
            + "unreadCount() threw \(error): the legacy unreadCount(completion:) reads that body "
            + "as 7, as it ignores the spaces and newlines around the number; the async API "
            + "must read every body the old one reads"))
    case .failure(let error):
      throw error
    }
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

    // The server goes away: the session's own error, which is no cancellation.
    server.stop()
    let refused = await Result {
      try await withDeadline(.seconds(5), "unreadCount() of a server that is gone") {
        try await client.unreadCount()
      }
    }
    if case .failure(let error as DeadlineExceeded) = refused { throw error }
    let refusedError: (any Error)? = if case .failure(let error) = refused { error } else { nil }
    #expect(
      refusedError is URLError,
      "the server was gone, and unreadCount() \(refusedError.map { "threw \($0)" } ?? "returned"): a refused connection is the session's URLError, passed on; only URLError(.cancelled), the session's word for a cancelled task, is turned into CancellationError"
    )
  }

  /// Every completion of one call of the old `unreadCount(completion:)`: the first within
  /// two seconds, then any that follow it within 200 ms.
  private func oldCount(_ client: InboxClient) async throws -> [Result<Int, any Error>] {
    let calls = Locked<[Result<Int, any Error>]>([])
    client.unreadCount { result in calls.withLock { $0.append(result) } }
    try await withDeadline(
      .seconds(2), "the old unreadCount(completion:)",
      hint: "the old API's completion is never called on this path: callers still use it"
    ) {
      while calls.value.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
    }
    _ = await eventually(within: .milliseconds(200)) { calls.value.count > 1 }
    return calls.value
  }

  @Test("The old unreadCount(completion:), which callers still use, reports each failure once")
  func oldCountReportsFailures() async throws {
    let server = try startedServer([
      "/unread": .status(500, "internal error"), "/text/unread": .ok("many"),
    ])
    let broken = try await oldCount(inbox(server))
    let text = try await oldCount(
      InboxClient(
        baseURL: server.url("/text/"), session: makeSession(),
        notificationCenter: NotificationCenter()))
    server.stop()
    let refused = try await oldCount(inbox(server))

    for (name, calls, expected) in [
      ("a 500", broken, "InboxError.status(500)"),
      ("the body \"many\"", text, "InboxError.notACount(\"many\")"),
      ("a refused connection", refused, "the session's URLError"),
    ] {
      let right: Bool =
        switch calls.first {
        case .failure(let error as InboxError)?:
          (name == "a 500" && error == .status(500))
            || (name != "a 500" && error == .notACount("many"))
        case .failure(let error)?: name == "a refused connection" && error is URLError
        default: false
        }
      #expect(
        calls.count == 1 && right,
        """
        the old unreadCount(completion:) answered \(name) with \(calls): it must call its \
        completion once, with \(expected); the app's other screens still call it, so \
        keeping it means keeping every path of it
        """)
    }
  }

  @Test("stopWatching() stops the old watcher: no poll starts after it")
  func stopWatchingStopsPolling() async throws {
    let server = try startedServer(["/unread": .ok("3")])
    defer { server.stop() }
    let observers = Observers()
    let client = inbox(server, center: observers.center)

    client.startWatching(every: 0.02)
    #expect(await eventually { observers.counts == [3] }, "the old watcher should post the count")
    client.stopWatching()
    // A poll already on its way may still arrive; after that, none.
    try await Task.sleep(for: .milliseconds(100))
    let settled = server.requests.count
    try await Task.sleep(for: .milliseconds(400))
    let later = server.requests.count - settled
    #expect(
      later <= 1,
      """
      \(later) polls reached the server in the 400 ms after stopWatching(), polling every \
      20 ms: stopWatching() must stop the old watcher's polling, which other screens start \
      and stop as they come and go
      """)
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

  @Test("Waits 2.5 s between polls without holding a thread")
  func waitsBetweenPollsWithoutBlocking() async throws {
    let server = try startedServer()
    // After the two counts every poll hangs: the loop leaves while a poll waits or sleeps,
    // never as one completes (see hangingThePolls).
    server.route("/unread", [.ok("3"), .ok("5"), .hang])
    defer { server.stop() }
    let client = inbox(server)

    // Longer than the pool check's patience: a wait that holds a thread (Thread.sleep,
    // a semaphore) between two polls is named.
    let seen = try await first(
      2, of: client.unreadCounts(every: .milliseconds(2500)),
      "the first two counts of unreadCounts(every: 2.5 s)", within: .seconds(8),
      hint: "the second poll never came")
    #expect(seen == [3, 5], "yield each change: 3, then 5; got \(seen)")
  }

  @Test("unreadCounts(every:) yields the count, then only changes, and posts each change")
  func countsYieldChanges() async throws {
    let server = try startedServer()
    // The count is 3 for several polls, then 5; every later poll hangs, so the loop leaves
    // while one waits, never as one completes (see hangingThePolls).
    server.route("/unread", [.ok("3"), .ok("3"), .ok("3\n"), .ok("3"), .ok("5"), .hang])
    defer { server.stop() }
    let observers = Observers()
    let client = inbox(server, center: observers.center)

    let seen = try await first(
      2, of: client.unreadCounts(every: .milliseconds(5)),
      "the first two counts of unreadCounts(every:)")
    #expect(
      seen == [3, 5],
      "yield only changes: the count was 3 for several polls, then 5; got \(seen)")
    #expect(
      await eventually { observers.counts == [3, 5] },
      Comment(
        rawValue: "the old observers of .inboxUnreadCountDidChange heard \(observers.counts): "
          + "post each change, with userInfo[\"count\"], as startWatching does"))
  }

  @Test("A slow answer keeps its place: counts and posts come in the order of the polls")
  func countsKeepTheirOrder() async throws {
    let server = try startedServer()
    server.route("/unread", [.slowHeaders(.milliseconds(200), "3"), .ok("5"), .status(503)])
    defer { server.stop() }
    let observers = Observers()
    let client = inbox(server, center: observers.center)

    let (seen, error) = try await withDeadline(
      .seconds(3), "unreadCounts(every:) of a slow first answer, then 5, then a 503",
      hint: "the stream never ends: finish it (throwing) when a poll fails"
    ) { () async throws -> ([Int], (any Error)?) in
      var seen: [Int] = []
      do {
        for try await count in client.unreadCounts(every: .milliseconds(5)) {
          seen.append(count)
          if seen.count == 3 { break }
        }
        return (seen, nil)
      } catch {
        return (seen, error)
      }
    }
    #expect(
      seen == [3, 5] && error as? InboxError == .status(503),
      Comment(
        rawValue: "the first poll's answer (3) took 200 ms, the next ones (5, then a 503) came "
          + "at once, and the stream yielded \(seen) and ended with "
          + "\(String(describing: error)) instead of [3, 5] and InboxError.status(503): the "
          + "counts come out in the order of the polls, and the next poll waits for the "
          + "answer to the one before (polls started on their own, a task each, let a fast "
          + "answer overtake a slow one)"))
    #expect(
      await eventually { observers.counts.count >= 2 } && observers.counts == [3, 5],
      Comment(
        rawValue: "the count went from 3 to 5 (the 3 slow to come) and the old observers heard "
          + "\(observers.counts): each change is posted in the order of the polls, so the "
          + "screens end on the count that is true"))
  }

  @Test("unreadCounts(every:) stops polling when nobody listens")
  func countsStop() async throws {
    // The first poll answers; every later one hangs until its client lets go, so the loop
    // leaves while a poll sleeps or waits, never as one completes (see hangingThePolls).
    let server = try startedServer()
    server.route("/unread", [.ok("3"), .hang])
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
    // A poll that started after the loop ended, or just before, waits on a request that
    // never ends: polling that stopped cancels it.
    if server.requests.count > 1 {
      #expect(
        await eventually { server.abandoned.contains("/unread") },
        Comment(
          rawValue: "it kept polling after nobody listened: the loop ended, and the poll it "
            + "left behind still waits for its answer; stop polling, the poll in flight "
            + "included, from the stream's onTermination"))
    }
  }

  @Test("A listener cancelled while a poll is in flight: its request is cancelled, no poll follows")
  func countsStopWhenCancelledMidPoll() async throws {
    let server = try startedServer()
    // The first poll answers; every later one hangs until its client lets go.
    server.route("/unread", [.ok("3"), .hang])
    defer { server.stop() }
    let client = inbox(server)
    let firstCount = Locked(false)

    let listener = Task {
      for try await _ in client.unreadCounts(every: .milliseconds(5)) {
        firstCount.withLock { $0 = true }
      }
    }
    guard await eventually({ firstCount.value && server.requests.count >= 2 }) else {
      listener.cancel()
      Issue.record(
        "unreadCounts(every:) should yield the first count and then poll again, 5 ms later")
      return
    }
    listener.cancel()
    _ = try await withDeadline(
      .seconds(2), "a loop over unreadCounts(every:) whose task was cancelled mid-poll",
      hint: "the listener's task was cancelled while a poll waited for its answer, and the "
        + "loop went on waiting: the stream must end when its task is cancelled"
    ) {
      await listener.result
    }
    #expect(
      await eventually { server.abandoned.contains("/unread") },
      """
      the listener's task was cancelled while a poll's request was in flight, and that \
      request kept running: nobody listens any more, so the poll in flight must be cancelled \
      with the stream, not only the polls after it
      """)
    let after = server.requests.count
    try await Task.sleep(for: .milliseconds(100))
    #expect(
      server.requests.count == after,
      Comment(
        rawValue: "\(server.requests.count - after) polls started after the listener's task was "
          + "cancelled and its stream had ended"))
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

  @Test("unreadCount(): every 2xx is a count, every other status an InboxError.status")
  func countStatuses() async throws {
    let statuses = successStatuses.filter { $0 != 204 } + failureStatuses
    let server = try startedServer()
    for code in statuses {
      server.route("/status/\(code)/unread", .status(code, code == 304 ? "" : "4"))
    }
    defer { server.stop() }
    let session = makeSession()

    for code in statuses {
      let client = InboxClient(
        baseURL: server.url("/status/\(code)/"), session: session,
        notificationCenter: NotificationCenter())
      let outcome = await Result {
        try await withDeadline(.seconds(2), "unreadCount() of a \(code)") {
          try await client.unreadCount()
        }
      }
      if (200..<300).contains(code) {
        #expect(
          (try? outcome.get()) == 4,
          Comment(
            rawValue: "the server answered \(code) with \"4\", and unreadCount() gave "
              + "\(outcome): every status from 200 to 299 is a success, as the legacy "
              + "unreadCount(completion:) reads it"))
      } else {
        #expect(
          throws: InboxError.status(code),
          Comment(
            rawValue: "the server answered \(code): a \(code) is not a success, throw "
              + "InboxError.status(\(code)), as the legacy unreadCount(completion:) does (a 404 "
              + "or a 304 is as much a failure as a 500)")
        ) { try outcome.get() }
      }
    }

    server.route("/unread", .ok("vingt-trois ✉️"))
    let text = await Result { try await inbox(server).unreadCount() }
    #expect(
      throws: InboxError.notACount("vingt-trois ✉️"),
      Comment(
        rawValue: "the server sent \"vingt-trois ✉️\" in UTF-8: throw InboxError.notACount "
          + "with that text, decoded as UTF-8 (an accent or an emoji takes several bytes)")
    ) { try text.get() }
  }

  @Test("unreadCount() suspends while a slow answer comes: no thread is held")
  func slowCountDoesNotBlock() async throws {
    // Slower than the pool check's patience (1.5 s).
    let server = try startedServer(["/unread": .slowHeaders(.seconds(2), "12")])
    defer { server.stop() }
    let count = try await withDeadline(
      .seconds(6), "unreadCount() of a slow server", hint: "the success path never returns"
    ) {
      try await inbox(server).unreadCount()
    }
    #expect(count == 12, "return the count the server sent")
  }

  @Test("A task cancelled before it calls unreadCount() throws CancellationError")
  func countAlreadyCancelled() async throws {
    let server = try startedServer(["/unread": .hang])
    defer { server.stop() }
    let client = inbox(server)

    let task = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await client.unreadCount()
    }
    await #expect(
      throws: CancellationError.self,
      "the task was already cancelled when it called unreadCount(): throw CancellationError"
    ) {
      try await withDeadline(
        .seconds(2), "unreadCount() in a cancelled task",
        hint: "the task was cancelled before unreadCount() started its request, and the cancel "
          + "was lost: nothing cancelled the request, so it runs on"
      ) {
        try await task.value
      }
    }
    #expect(
      await eventually { server.openConnections == 0 },
      Comment(
        rawValue: "unreadCount() threw, but its request is still open on the server: the "
          + "cancel never reached it"))
  }

  @Test("A cancel that comes while the request is being created still cancels it")
  func countCancelledWhileCreating() async throws {
    let server = try startedServer(["/unread": .hang])
    defer { server.stop() }
    // Offline data tasks: nothing answers them, and only a cancel completes them.
    let session = ScriptedSession()
    session.offline.withLock { $0 = { _ in } }
    let client = inbox(server, session: session)
    let handle = Locked<Task<Int, any Error>?>(nil)
    // Only an answer that calls the legacy unreadCount(completion:) creates its data task
    // here: the moment it exists, before it is handed back, the task is cancelled.
    session.afterCreating.withLock {
      $0 = {
        if withUnsafeCurrentTask(body: { $0 }) != nil {
          withUnsafeCurrentTask { $0?.cancel() }
        } else {
          handle.value?.cancel()
        }
      }
    }

    let task = Task { try await client.unreadCount() }
    handle.withLock { $0 = task }
    if !(await eventually { session.created.value > 0 || server.requests.count > 0 }) {
      task.cancel()
    }
    if session.created.value == 0 {
      // The answer awaits URLSession's own data(from:): its cancel is URLSession's job.
      task.cancel()
    }
    await #expect(throws: CancellationError.self, "the task was cancelled: throw CancellationError")
    {
      try await withDeadline(
        .seconds(2), "unreadCount(), cancelled while its request was being created",
        hint: "the cancel came after the data task was created and before unreadCount() had it "
          + "in hand, and it was lost: nothing cancelled the data task, so the request runs on"
      ) {
        try await task.value
      }
    }
  }

  @Test("Each unreadCount() has its own request: a cancel does not spill into another call")
  func callsDoNotShareState() async throws {
    let server = try startedServer()
    server.route("/unread", [.hang, .slowHeaders(.milliseconds(200), "8"), .ok("9")])
    defer { server.stop() }
    let client = inbox(server)

    let first = Task { try await client.unreadCount() }
    #expect(await requestArrived(server, "/unread"), "unreadCount() should send its request")
    let second = Task { try await client.unreadCount() }
    #expect(
      await eventually { server.requests.count == 2 }, "the second call should send its request")
    first.cancel()
    let secondOutcome = try await withDeadline(
      .seconds(2), "unreadCount() beside a cancelled call",
      hint: "the call nobody cancelled never finished"
    ) {
      await second.result
    }
    #expect(
      (try? secondOutcome.get()) == 8,
      Comment(
        rawValue: "two calls ran at once and only the first was cancelled, but the second gave "
          + "\(secondOutcome): the state of one call belongs to that call, or cancelling one "
          + "screen's badge breaks another's"))
    await #expect(throws: CancellationError.self, "the cancelled call throws CancellationError") {
      try await withDeadline(.seconds(2), "the cancelled unreadCount()") { try await first.value }
    }
    let later = await Result {
      try await withDeadline(.seconds(2), "unreadCount() after a cancelled call") {
        try await client.unreadCount()
      }
    }
    #expect(
      (try? later.get()) == 9,
      Comment(
        rawValue: "a call made after a cancelled one gave \(later): a cancel ends that one "
          + "call, and every later call starts afresh"))
  }

  @Test("unreadCounts(every:) polls at once, not after one interval")
  func countsFirstPollAtOnce() async throws {
    let server = try startedServer()
    server.route("/unread", [.ok("3"), .hang])
    defer { server.stop() }
    let counts = try await first(
      1, of: inbox(server).unreadCounts(every: .seconds(30)),
      "the first count, with an interval of 30 seconds",
      hint: "the first poll waited for the interval: the count is wanted now, and then every "
        + "interval; a badge polled every minute would be blank for a minute")
    #expect(counts == [3], "yield the first count")
  }

  @Test("unreadCounts(every:) polls an interval apart, fractions of a second included")
  func countsSubSecondInterval() async throws {
    let server = try startedServer()
    server.route("/unread", [.ok("1"), .ok("2"), .ok("3"), .status(503)])
    defer { server.stop() }
    let interval = Duration.milliseconds(250)

    _ = await Result {
      try await withDeadline(.seconds(4), "four polls, 250 ms apart") {
        for try await _ in inbox(server).unreadCounts(every: interval) {}
      }
    }
    let times = server.arrivals.filter { $0.path == "/unread" }.map(\.time)
    let gaps = zip(times, times.dropFirst(2)).map { $1 - $0 }
    #expect(
      times.count >= 3 && gaps.allSatisfy { $0 >= interval },
      Comment(
        rawValue: "with an interval of 250 ms, the server saw the polls "
          + "\(gaps.map { "\(Int($0 / .milliseconds(1))) ms" }) apart (each to the one after "
          + "next): the interval was not waited, so the server is polled in a tight loop; a "
          + "Duration of a quarter of a second is not zero seconds"))
  }

  @Test("A second listener, or one that comes while the old watcher runs, gets the count first")
  func secondListenerGetsTheCount() async throws {
    let server = try startedServer(["/unread": .ok("3")])
    defer { server.stop() }
    let observers = Observers()
    let client = inbox(server, center: observers.center)

    // A first screen listens, and keeps listening.
    let heardFirst = Locked(false)
    let firstScreen = Task {
      for try await _ in client.unreadCounts(every: .milliseconds(20)) {
        heardFirst.withLock { $0 = true }
      }
    }
    defer { firstScreen.cancel() }
    #expect(await eventually { heardFirst.value }, "the first listener should get the count")
    await holdingTheNextPoll(of: server, answering: "3")
    // (A long interval: the listener leaves while its stream sleeps, never as a poll
    // completes; see hangingThePolls.)
    let second = try await first(
      1, of: client.unreadCounts(every: .seconds(30)),
      "the first count of a second listener",
      hint: "a second listener must get the current count first, even though the count is "
        + "no news to the client, the first listener or the observers")
    #expect(second == [3], "a second listener's first value is the current count")
    // The first screen leaves while its stream waits on a request that never ends (never
    // as a request completes, which FoundationNetworking does not always survive).
    await hangingThePolls(of: server, streams: 1)
    firstScreen.cancel()
    _ = await firstScreen.result
    server.route("/unread", .ok("3"))
    #expect(
      observers.counts == [3],
      Comment(
        rawValue:
          "the count never changed from 3, and the old observers heard \(observers.counts): "
          + "a change is posted once, however many listeners there are"))

    // A listener that comes while the old watcher runs.
    let other = Observers()
    let watched = inbox(server, center: other.center)
    watched.startWatching(every: 0.02)
    defer { watched.stopWatching() }
    #expect(await eventually { other.counts == [3] }, "the old watcher should post the count")
    let counts = try await first(
      1, of: watched.unreadCounts(every: .seconds(30)),
      "the first count of a listener that came while the old watcher runs",
      hint: "a listener must get the current count first, even though the old watcher has "
        + "already posted it")
    #expect(counts == [3], "a new listener's first value is the current count")
  }

  @Test("A stream's listener leaving does not stop the old watcher that other screens use")
  func legacyWatcherOutlivesAListener() async throws {
    let server = try startedServer(["/unread": .ok("3")])
    defer { server.stop() }
    let observers = Observers()
    let client = inbox(server, center: observers.center)

    client.startWatching(every: 0.02)
    defer { client.stopWatching() }
    #expect(await eventually { observers.counts == [3] }, "the old watcher should post the count")
    let heard = Locked(false)
    // A long interval: the listener leaves while its stream sleeps, never as a poll
    // completes (see hangingThePolls); the old watcher goes on polling every 20 ms.
    let newScreen = Task {
      for try await _ in client.unreadCounts(every: .seconds(30)) {
        heard.withLock { $0 = true }
      }
    }
    #expect(
      await eventually { heard.value },
      "a listener that came while the old watcher runs should get the current count first")
    newScreen.cancel()
    _ = await newScreen.result
    // The new listener has left; the old screens still watch.
    server.route("/unread", .ok("9"))
    #expect(
      await eventually { observers.counts.last == 9 },
      Comment(
        rawValue: "after a stream's listener left, the count went from 3 to 9 and the old "
          + "screens heard \(observers.counts): the watcher they started with "
          + "startWatching(every:) was stopped; it belongs to them, and only stopWatching() "
          + "ends it"))
  }

  @Test("Once a stream is over, the polling lets the client go")
  func clientReleased() async throws {
    let server = try startedServer([
      "/ok": .ok("3"), "/broken/unread": .status(500), "/hang/unread": .hang,
    ])
    server.route("/unread", [.ok("3"), .hang])
    defer { server.stop() }

    for (base, ending) in [
      ("/", "the listener left"), ("/broken/", "a poll failed"),
      ("/hang/", "the listener's task was cancelled while a poll was in flight"),
    ] {
      let weakClient = WeakReference<InboxClient>()
      do {
        let client = InboxClient(
          baseURL: server.url(base), session: makeSession(),
          notificationCenter: NotificationCenter())
        weakClient.object = client
        if base == "/hang/" {
          let listener = Task { for try await _ in client.unreadCounts(every: .milliseconds(5)) {} }
          _ = await requestArrived(server, "/hang/unread")
          listener.cancel()
          _ = try? await withDeadline(
            .seconds(2), "unreadCounts(every:) after its listener's task was cancelled",
            hint: "the stream never ends once nobody listens: cancel the polling from "
              + "onTermination"
          ) {
            try await listener.value
          }
        } else {
          _ = await Result {
            try await withDeadline(.seconds(2), "the first count of unreadCounts(every:)") {
              for try await _ in client.unreadCounts(every: .milliseconds(5)) {
                try await Task.sleep(for: .milliseconds(30))
                break
              }
            }
          }
        }
      }
      #expect(
        await eventually { weakClient.object == nil },
        Comment(
          rawValue: "\(ending) and the stream is over, but something still holds the client: "
            + "the polling still runs; a stream nobody listens to must stop and let go"))
    }
  }

  @Test("unreadCount() fails every 2xx body that is not a count with that body, as received")
  func notACountCarriesTheBody() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let session = makeSession()
    // Each a 2xx whose body is no count: what the legacy call fails with notACount(body).
    let answers: [(route: String, response: HTTPTestResponse, body: String, told: String)] = [
      ("/no-content/", .status(204), "", "204 and no body"),
      ("/empty/", .ok(""), "", "200 and an empty body"),
      ("/blank/", .ok(" \n"), " \n", "200 and a body of a space and a newline"),
      ("/padded/", .ok(" lots\n"), " lots\n", "200 and the body \" lots\\n\""),
    ]
    for answer in answers {
      server.route(answer.route + "unread", answer.response)
      let client = InboxClient(
        baseURL: server.url(answer.route), session: session,
        notificationCenter: NotificationCenter())
      let outcome = await Result {
        try await withDeadline(.seconds(2), "unreadCount() of a \(answer.told)") {
          try await client.unreadCount()
        }
      }
      if case .failure(let error as DeadlineExceeded) = outcome { throw error }
      let expected = InboxError.notACount(answer.body)
      switch outcome {
      case .failure(let error as InboxError) where error == expected:
        continue
      case .success(let count):
        Issue.record(
          Comment(
            rawValue: "the server answered \(answer.told), and unreadCount() returned \(count): "
              + "a body with no number in it is not a count, even an empty one (a 204 says "
              + "nothing about the inbox); the legacy unreadCount(completion:) fails it with "
              + "\(expected), so the badge never shows a count nobody sent"))
      case .failure(InboxError.notACount(let text)):
        Issue.record(
          Comment(
            rawValue: "the server answered \(answer.told), and unreadCount() threw "
              + "InboxError.notACount(\(String(reflecting: text))): notACount carries the body "
              + "as received, spaces and newlines included, as the legacy "
              + "unreadCount(completion:) reports it (\(expected)); callers that still compare "
              + "the old API's errors must get the same one from the new"))
      case .failure(let error):
        Issue.record(
          Comment(
            rawValue: "the server answered \(answer.told), and unreadCount() threw \(error): "
              + "a 2xx body that is not a count is \(expected), as the legacy "
              + "unreadCount(completion:) reports it"))
      }
    }
  }

  @Test("unreadCounts(every:) waits the interval between polls while the count stays the same")
  func unchangedCountWaitsTheInterval() async throws {
    // The count is 5 at every poll: one change, then nothing but the same count. The fifth
    // poll never ends, so the listener leaves while a request waits, never as one completes
    // (FoundationNetworking does not always survive a cancel at that moment).
    let server = try startedServer()
    server.route("/unread", Array(repeating: .ok("5"), count: 4) + [.hang])
    defer { server.stop() }
    let interval = Duration.milliseconds(150)
    let client = inbox(server)
    let listener = Task { for try await _ in client.unreadCounts(every: interval) {} }
    defer { listener.cancel() }

    let polled = await eventually(within: .seconds(3)) { server.requests.count >= 5 }
    listener.cancel()
    _ = await listener.result
    #expect(
      polled, "unreadCounts(every:) should poll every 150 ms for as long as it is listened to")
    let times = server.arrivals.filter { $0.path == "/unread" }.map(\.time).prefix(4)
    let gaps = zip(times, times.dropFirst()).map { $1 - $0 }
    #expect(
      gaps.allSatisfy { $0 >= interval },
      Comment(
        rawValue: "with an interval of 150 ms and a count that stayed 5, the server saw the "
          + "polls \(gaps.map { "\(Int($0 / .milliseconds(1))) ms" }) apart: a poll that "
          + "brought no change was followed by the next one without waiting, so for as long "
          + "as nothing changes (most of the time) the server is polled back to back; every "
          + "poll, whatever it brought, is an interval from the next"))
  }

  @Test("unreadCounts(every:) ends with the session's error when a poll's connection drops")
  func countsEndOnSessionError() async throws {
    let server = try startedServer()
    // The first poll answers; the second one's connection drops halfway; any later one
    // would answer another count.
    server.route(
      "/unread", [.ok("3"), .dropped(Array("40".utf8), after: 1), .ok("4")])
    defer { server.stop() }
    let client = inbox(server)
    let seen = Locked<[Int]>([])
    let ending = Locked<(any Error)??>(nil)
    let listener = Task {
      do {
        for try await count in client.unreadCounts(every: .milliseconds(5)) {
          seen.withLock { $0.append(count) }
        }
        ending.withLock { $0 = .some(nil) }
      } catch {
        ending.withLock { $0 = .some(error) }
      }
    }
    defer { listener.cancel() }

    // Over once the stream ends, or once it has gone on past the dropped poll.
    let over = await eventually {
      ending.value != nil || seen.value.count > 1 || server.requests.count > 2
    }
    #expect(over, "unreadCounts(every:) should yield the count and poll again, 5 ms later")
    guard over else { return }
    let ended: (any Error)?? = ending.value
    switch ended {
    case .some(.some(let error)):
      #expect(
        error is URLError,
        Comment(
          rawValue: "the second poll's connection dropped, and the stream ended with \(error): "
            + "a failed poll ends the stream with its own error, here the session's URLError"))
    case .some(.none):
      Issue.record(
        Comment(
          rawValue: "the second poll's connection dropped, and the stream finished without an "
            + "error: a failed poll ends the stream with its error, so the listener knows why "
            + "it ended"))
    case .none:
      Issue.record(
        Comment(
          rawValue: "the second poll's connection dropped (the session's URLError), and the "
            + "stream went on polling (\(server.requests.count) polls, counts \(seen.value)): "
            + "the first failed poll ends the stream with its error, whatever the error; "
            + "skipping failed polls is the old watcher's way, and a listener of the stream "
            + "would never hear that the network failed"))
    }
  }

  @Test("Two streams of one client: a second listener does not end the first one's stream")
  func secondStreamLeavesTheFirst() async throws {
    let server = try startedServer(["/unread": .ok("3")])
    defer { server.stop() }
    let client = inbox(server)
    let seen = Locked<[[Int]]>([[], []])
    let ended = Locked<[String?]>([nil, nil])
    func listen(_ screen: Int) -> Task<Void, Never> {
      Task {
        do {
          for try await count in client.unreadCounts(every: .milliseconds(5)) {
            seen.withLock { $0[screen].append(count) }
          }
          ended.withLock { $0[screen] = "finished" }
        } catch {
          ended.withLock { $0[screen] = "ended with \(error)" }
        }
      }
    }
    let firstScreen = listen(0)
    defer { firstScreen.cancel() }
    #expect(await eventually { seen.value[0] == [3] }, "the first listener should get the count")
    await holdingTheNextPoll(of: server, answering: "3")
    let secondScreen = listen(1)
    defer { secondScreen.cancel() }
    #expect(await eventually { seen.value[1] == [3] }, "the second listener should get the count")
    server.route("/unread", .ok("7"))
    _ = await eventually(within: .seconds(5)) {
      (0..<2).allSatisfy { seen.value[$0].last == 7 || ended.value[$0] != nil }
    }
    // The screens leave (the defers) while their streams wait on requests that never end.
    await hangingThePolls(of: server, streams: 2)
    for (screen, other) in [(0, "second"), (1, "first")] {
      if let how = ended.value[screen] {
        Issue.record(
          Comment(
            rawValue: "two screens listened to unreadCounts(every:) of one client, and the "
              + "\(other == "second" ? "first" : "second") one's stream \(how) while it still "
              + "listened (it got \(seen.value[screen])), once the \(other) screen listened "
              + "too: each call is a stream of its own, with its own polling, which only its own "
              + "listener ends; the client serves every screen at once"))
      } else {
        #expect(
          seen.value[screen] == [3, 7],
          Comment(
            rawValue: "two screens listened to one client, the count went from 3 to 7, and one "
              + "listener got \(seen.value[screen]): each stream yields every change"))
      }
    }
  }

  @Test("A listener that reads slowly still gets every change the observers heard, in order")
  func slowListenerGetsEveryChange() async throws {
    let server = try startedServer()
    // After the four counts every poll hangs: the loop leaves while a poll waits or sleeps,
    // never as one completes (see hangingThePolls).
    server.route("/unread", [.ok("1"), .ok("2"), .ok("3"), .ok("4"), .hang])
    defer { server.stop() }
    let observers = Observers()
    let client = inbox(server, center: observers.center)

    // The listener is busy with the 1 until the observers have heard the 4 (or for two
    // seconds: a stream that polls only when asked never gets there, and need not).
    let seen = try await withDeadline(
      .seconds(5), "the counts 1 to 4 of a slow listener",
      hint: "yield each change, and keep it until the listener asks"
    ) {
      var seen: [Int] = []
      for try await count in client.unreadCounts(every: .milliseconds(5)) {
        seen.append(count)
        if count == 1 { _ = await eventually { observers.counts.last == 4 } }
        if count == 4 { break }
      }
      return seen
    }
    // A stream may yield a count before it posts it.
    _ = await eventually { observers.counts.count >= seen.count }
    #expect(
      seen == observers.counts,
      Comment(
        rawValue: "while the listener was busy with the count 1, the old observers heard "
          + "\(observers.counts), and the listener then got \(seen): the stream dropped the "
          + "counts its listener had not read yet, so the screen skips changes the old screens "
          + "showed; every change is a value of the stream, kept until the listener reads it"))
  }
}

/// Blocks the calling thread until `next` is signalled, or for a second when `polls()` is
/// still 1 by then, or for 3 seconds.
private func waitForTheNextPost(_ next: DispatchSemaphore, polls: () -> Int) {
  let start = DispatchTime.now().uptimeNanoseconds
  while next.wait(timeout: .now() + .milliseconds(10)) == .timedOut {
    let waited = DispatchTime.now().uptimeNanoseconds - start
    if waited >= 3_000_000_000 || (waited >= 1_000_000_000 && polls() <= 1) { return }
  }
}

/// Routes the client's next poll to an answer (`body`) that comes half a second late, and
/// returns once that poll is on its way: a second stream started now comes while the first
/// stream's poll waits, never as its answer arrives. A client that (wrongly) cancels the
/// first stream's polling then does so safely: FoundationNetworking does not always survive
/// a cancel that meets a request as it completes (the cancel waits on the session's queue,
/// the completion on the cancel, or the process stops).
private func holdingTheNextPoll(of server: HTTPTestServer, answering body: String) async {
  // Counted from the new route on (the server picks a request's answer as it counts it).
  server.route("/unread", [.slowHeaders(.milliseconds(500), body), .ok(body)])
  let sent = server.requests.count
  _ = await soon { server.requests.count > sent }
}

/// Routes every poll from now on to an answer that never comes, and returns once `streams`
/// polls wait on it (or after 2 s): a listener that leaves now cancels a request that
/// waits, never one that completes, which FoundationNetworking does not always survive (the
/// cancel waits on the session's queue while the completion waits on the cancel: Swift 6.3's
/// swift-corelibs-foundation issue 5412, fixed after it). Every test here that ends a stream
/// does so while its polls hang or sleep.
private func hangingThePolls(of server: HTTPTestServer, streams: Int) async {
  // Counted from the new route on (the server picks a request's answer as it counts it), so
  // each of these requests hangs, and a stream that sent one has no other in flight.
  server.route("/unread", .hang)
  let sent = server.requests.count
  _ = await soon { server.requests.count >= sent + streams }
}

extension InboxTests {
  /// The tests that need all of the pool's threads (they turn the pool check off), one at a
  /// time: each would take the threads the other needs.
  @Suite("Races", .serialized)
  struct Races {
    @Test("The old observers hear each change in order, even when one of them is slow")
    func observersHearEachChangeInOrder() async throws {
      let server = try startedServer()
      // After the two counts every poll hangs: the loop leaves while a poll waits or sleeps,
      // never as one completes (see hangingThePolls).
      server.route("/unread", [.ok("3"), .ok("5"), .hang])
      defer { server.stop() }
      // An old screen that takes its time over the first count: until it hears of another one,
      // or for a second if the client has not polled again meanwhile (it waits for this
      // delivery, as it should), or for 3 seconds if it has (the next count may be on its way
      // to a post beside this one, which a busy machine can hold up for a second).
      let later = DispatchSemaphore(value: 0)
      // Whether the slow observer is still busy with the 3, and the counts posted meanwhile.
      let busy = Locked(false)
      let beside = Locked<[Int]>([])
      let observers = Observers { count in
        if count == 3 {
          busy.withLock { $0 = true }
          waitForTheNextPost(later) { server.answered.filter { $0 == "/unread" }.count }
          busy.withLock { $0 = false }
        } else {
          if busy.value { beside.withLock { $0.append(count) } }
          later.signal()
        }
      }
      let client = inbox(server, center: observers.center)

      // With the pool check off, the pool has all its threads: a post made elsewhere would run
      // beside the slow one, as on a device. Off until the observers have heard both counts:
      // a pool check that another test starts meanwhile would hold the thread such a post
      // needs until the slow observer gave up, and the posts would come out in order by luck.
      try await withoutPoolCheck {
        _ = try await first(
          2, of: client.unreadCounts(every: .milliseconds(5)), "the counts 3 and 5")
        #expect(
          await eventually(within: .seconds(5)) { observers.counts.count >= 2 },
          "the old observers should hear both changes")
      }
      #expect(
        observers.counts == [3, 5] && beside.value.isEmpty,
        Comment(
          rawValue: "the count went from 3 to 5, and the old observers heard \(observers.counts): "
            + "while one observer was slow over the 3, the 5 was posted beside it, so a screen "
            + "can end on a count that is no longer true (the 3 last); each change must be "
            + "posted in turn, the next one after the last has been delivered (a post handed "
            + "to a task of its own is delivered whenever that task runs, beside the others)"))
    }

    @Test("A change that two streams of one client see at once is posted once")
    func oneChangeOnePost() async throws {
      let server = try startedServer(["/unread": .ok("100")])
      defer { server.stop() }
      let posts = Locked<[(count: Int, thread: pthread_t)]>([])
      let center = NotificationCenter()
      _ = center.addObserver(forName: .inboxUnreadCountDidChange, object: nil, queue: nil) { note in
        guard let count = note.userInfo?["count"] as? Int else { return }
        posts.withLock { $0.append((count, pthread_self())) }
      }
      let client = inbox(server, center: center)

      // Two screens listen, each on an executor that lets the test act inside its stream's
      // yield of each new count: there, the two streams wait for each other and go on together,
      // one a tuned time after the other (see Rendezvous), so the two decide around the same
      // instant whether the count is news. A check and an update of the last count under two
      // separate locks post the change twice within a few hundred rounds.
      let rendezvous = Rendezvous()
      let parties = Locked<[Int: pthread_t]>([:])
      let executors = [HookedExecutor(), HookedExecutor()]
      let received = Locked<[[Int]]>([[], []])

      func playRounds() async {
        guard await soon({ received.value == [[100], [100]] }) else {
          // A listener that never hears the first count is another test's business.
          return
        }

        // So many rounds, or so much time: a machine too busy to finish the rounds does fewer,
        // which can let the gap go unseen but never fails a correct answer.
        let rounds = stressAmount(grading: 150, verify: 1_200)
        let budget: Duration = stressAmount(grading: .milliseconds(1_500), verify: .seconds(8))
        let clock = ContinuousClock()
        let end = clock.now + budget
        var postedByAParty = false
        for round in 1...rounds where clock.now < end {
          let count = 100 + round
          rendezvous.reset()
          for party in 0..<2 {
            executors[party].whenEnqueuedFromElsewhere {
              parties.withLock { $0[party] = pthread_self() }
              rendezvous.arrive(as: party)
            }
          }
          server.route("/unread", .ok("\(count)"))
          // The round is over once both streams have gone on from their yield, both listeners
          // have the count, and it is posted (a second post, late, is still seen: every round
          // looks at all the posts so far).
          // (The first round waits longer: the first stream's poll that the second stream
          // met is answered only half a second late.)
          let done = await soon(within: round == 1 ? .seconds(2) : .milliseconds(500)) {
            rendezvous.isOver && received.value.allSatisfy { $0.last == count }
              && posts.value.contains { $0.count == count }
          }
          // The same count posted twice in a row is one change posted twice. (A stream that
          // posts an answer that was already stale when it arrived, after a newer one, is
          // another matter, and not this test's.)
          let postedCounts = posts.value.map(\.count)
          if let twice = zip(postedCounts, postedCounts.dropFirst()).first(where: { $0 == $1 })?.0 {
            Issue.record(
              Comment(
                rawValue: "the count became \(twice), and two streams of one client, which saw it "
                  + "at the same moment, both posted it (by round \(round)): each decided it was "
                  + "news before the other had recorded it, so the old screens hear the one "
                  + "change twice; a change is posted once, whoever sees it first"))
            return
          }
          // A round that does not end (no post, a stream that stopped) is other tests'
          // business; so is a stream that posts elsewhere than where it yields (one poll per
          // next(), in the listener's task): the rendezvous then aims at nothing.
          guard done, let first = posts.value.first(where: { $0.count == count }) else { break }
          let threads = parties.value
          let byParty = threads.values.contains { pthread_equal($0, first.thread) != 0 }
          postedByAParty = postedByAParty || byParty
          if round >= 20, !postedByAParty { break }
          guard byParty, let second = threads[1] else { continue }
          rendezvous.learn(secondCameFirst: pthread_equal(first.thread, second) != 0)
        }
      }

      await withoutPoolCheck {
        func listen(_ party: Int) -> Task<Void, any Error> {
          Task(executorPreference: executors[party]) {
            for try await count in client.unreadCounts(every: .milliseconds(1)) {
              received.withLock { $0[party].append(count) }
            }
          }
        }
        var listeners = [listen(0)]
        if await soon({ received.value[0] == [100] }) {
          await holdingTheNextPoll(of: server, answering: "100")
          listeners.append(listen(1))
          await playRounds()
        }
        // The listeners leave while their streams wait on requests that never end, on every
        // way out of the rounds.
        await hangingThePolls(of: server, streams: listeners.count)
        for listener in listeners { listener.cancel() }
      }
    }
  }
}
