import Foundation
import HTTPTestServer
import Testing
import WorkbookTesting

@testable import Networking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The contract of `fetch(_:) async throws -> Data`, path by path, and the test that pins
/// each cell ("—": does not apply, and why).
///
/// | path | result / error | released | resumes | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | 2xx (200…299, 204 empty) | the body, unchanged: `returnsTheBody`, `everySuccessStatus`, late headers: `slowHeaders` | — (a complete answer: the session keeps the connection for reuse) | once | suspends, no thread held: `slowAnswerDoesNotBlock` |
/// | 3xx, 4xx, 5xx | `BadStatus(code)`: `badStatusThrows` | — (a complete answer) | once | — (the same completion path as a 2xx) |
/// | dropped, truncated | the session's `URLError`: `droppedConnectionThrows`, `truncatedBodyThrows` | — (the server closed it) | once | — (as a 2xx) |
/// | an answer 2 s late | the body: `lateAnswerIsNotPolledFor` | — | once | suspends once, no polling: `lateAnswerIsNotPolledFor` |
/// | cancel before the call | `CancellationError`: `alreadyCancelled` | — (no request is left running: the test would never end; one started and cancelled at once is allowed, though the server may see its GET begin: a catalogued alternative does so, and the doc comment promises only CancellationError and a cancelled data task) | once | — (nothing to wait for) |
/// | cancel while the data task is created | `CancellationError`, the data task cancelled (not only the caller resumed): `cancelWhileCreating` | — (offline data task: no connection) | once | — |
/// | cancel as the data task is stored | `CancellationError` and the data task cancelled, never lost: `cancelWhileStoring` (aimed race) | — (offline data task) | once | the cancel from another thread, in the gap: `cancelWhileStoring` |
/// | cancel in flight | `CancellationError`: `cancellationReachesTheServer` | the server sees the close: `cancellationReachesTheServer` | once | — |
/// | cancel as the answer arrives | `CancellationError`, not the data nor `BadStatus`: `lateAnswerAfterCancel` | — (the answer is complete) | once | — |
/// | a second call after a cancel or a failure | its own body: `callsDoNotShareState` | — | once each | — |
/// | two calls at once, one cancelled | the other gets its body: `callsDoNotShareState` | only the cancelled one's connection closes: `callsDoNotShareState` | once each | — |
/// | a path with a query (`/quote?id=7`) | the body of that path and query: `pathWithAQuery` | — | once | — |
/// | a request that fails (dropped) | the session's error, the request sent once, not tried again: `aFailureIsNotRetried` | — | once | — |
/// | two calls for the same path at once, one cancelled | the other gets its body: `samePathTwiceOneCancelled` | only one connection closes: `samePathTwiceOneCancelled` | once each | — |
/// | cancel in flight, the data task slow to report back | `CancellationError`, only once the data task's completion has run (never from the cancel itself): `cancelEndsWithTheDataTask` | the request is over before the caller goes on: `cancelEndsWithTheDataTask` | once | the completion held after cancel() until the test lets it: `cancelEndsWithTheDataTask` |
/// | listener leaving, second listener | — (one call, one caller: no stream) | — | — | — |
/// | cancel() reads the data task and sets its flag under two separate locks | — not caught: the store must land in the nanoseconds between cancel()'s two steps, and cancel() runs in the learner's code, where no test can hold it; `cancelWhileStoring` aims at the other side's gap | | | |
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

  @Test("Every status from 200 to 299 is a success: fetch(_:) returns its body")
  func everySuccessStatus() async throws {
    let server = try startedServer(statusRoutes(successStatuses))
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    for code in successStatuses {
      let result = await Result {
        try await withDeadline(
          .seconds(2), "fetch(\"/status/\(code)\")",
          hint: "the completion's success path never resumes the continuation"
        ) {
          try await client.fetch("/status/\(code)")
        }
      }
      switch result {
      case .success(let data):
        #expect(
          String(decoding: data, as: UTF8.self) == statusBody(code),
          "the server answered \(code) with a body: return that body, unchanged")
      case .failure(let error) where error is CancellationError:
        Issue.record(
          Comment(
            rawValue: "the server answered \(code), and fetch(_:) threw \(error) though nobody "
              + "cancelled this call: a cancel must belong to the call it was made for; one "
              + "kept where the next calls find it (state shared beyond one call) cancels "
              + "them too"))
      case .failure(let error):
        Issue.record(
          Comment(
            rawValue: "the server answered \(code), and fetch(_:) threw \(error): every status "
              + "from 200 to 299 is a success (201 Created, 204 No Content, 206 Partial "
              + "Content…), not only 200, so a caller would see an error where the server "
              + "said yes"))
      }
    }
  }

  @Test("A status outside 200…299 (a 3xx, a 4xx, a 5xx) throws BadStatus with its code")
  func badStatusThrows() async throws {
    let server = try startedServer(statusRoutes(failureStatuses))
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    for code in failureStatuses {
      let path = "/status/\(code)"
      let error = await #expect(
        throws: BadStatus.self,
        Comment(
          rawValue: "the server answered \(code): a \(code) is not a success, throw "
            + "BadStatus(code: \(code)) (the legacy completion reports it as a response, "
            + "with no error, so check response.statusCode; a 404 or a 304 is as much a "
            + "failure as a 500)")
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
      "throw the session's own error (a URLError) for a dropped connection, not \(error.map { "\($0)" } ?? "nothing")"
    )
    // The same request through the legacy call: what the session itself reports.
    let reported = try await withDeadline(.seconds(2), "the legacy fetch(\"/dropped\")") {
      await withCheckedContinuation { continuation in
        _ = client.fetch("/dropped") { _, _, error in
          continuation.resume(returning: (error as? URLError)?.code)
        }
      }
    }
    if let reported, let thrown = error as? URLError {
      #expect(
        thrown.code == reported,
        """
        fetch threw URLError(\(thrown.code.rawValue)) where the session reported \
        URLError(\(reported.rawValue)) for the same dropped connection: pass the session's \
        error on unchanged, before looking at the response (which a failed request may lack)
        """)
    }
  }

  @Test("A truncated body throws instead of returning part of it")
  func truncatedBodyThrows() async throws {
    let server = try startedServer(["/short": .truncated(payload(4000), after: 1000)])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    let error = await #expect(
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
    if let error, !(error is DeadlineExceeded) {
      #expect(
        error is URLError,
        "throw the session's own error (a URLError) for a truncated body, not \(error)")
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
    // Scripted only to count the data tasks made: the hint depends on whether there was one.
    let session = ScriptedSession()
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
        likelyCause: {
          session.created.value == 0
            ? "no data task was made (rightly, for a cancelled caller), but nothing resumed "
              + "the continuation either: the path that decides not to start must resume it, "
              + "throwing CancellationError"
            : "onCancel ran before the data task existed and the cancel was lost: remember "
              + "it and cancel the data task once it is created"
        }
      ) {
        try await task.value
      }
    }
  }

  @Test("Waiting for an answer 2 seconds late, fetch(_:) suspends once: it does not poll")
  func lateAnswerIsNotPolledFor() async throws {
    // Long enough that a loop looking every few milliseconds looks many times even on a
    // machine so busy that each of its sleeps ends far too late.
    let server = try startedServer(["/late": .slowHeaders(.seconds(2), "late")])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)
    // The fetch runs on a thread of its own, where its steps are counted.
    let executor = OneThreadExecutor()

    let data = try await withDeadline(
      .seconds(6), "fetch(\"/late\")",
      hint: "the completion's success path never resumes the continuation", on: executor
    ) {
      try await client.fetch("/late")
    }
    #expect(String(decoding: data, as: UTF8.self) == "late", "return the body")
    // One step before it suspends, one once resumed, and the deadline's own.
    let steps = executor.jobsRun
    #expect(
      steps <= 4,
      Comment(
        rawValue: "fetch(_:) polled instead of suspending: it ran \(steps) separate steps on "
          + "its thread while it waited for an answer that came 2 seconds late (a loop "
          + "around Task.sleep that looks whether the completion came?): each look wakes the "
          + "thread, and the answer waits for the next look"))
  }

  @Test("Waiting for a slow answer suspends: no thread is held meanwhile")
  func slowAnswerDoesNotBlock() async throws {
    // Slower than the pool check's patience (1.5 s), so code that blocks a thread of the
    // concurrency pool while the answer is on its way is seen doing so.
    let server = try startedServer(["/slow": .slowHeaders(.seconds(2), "worth the wait")])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    let data = try await withDeadline(
      .seconds(6), "fetch(\"/slow\")",
      hint: "the completion's success path never resumes the continuation"
    ) {
      try await client.fetch("/slow")
    }
    #expect(String(decoding: data, as: UTF8.self) == "worth the wait", "return the body")
  }

  @Test("A cancel that comes while the data task is being created still cancels it")
  func cancelWhileCreating() async throws {
    let server = try startedServer(["/hang": .hang])
    defer { server.stop() }
    // Offline data tasks: nothing answers them, and only a cancel completes them.
    let session = ScriptedSession()
    defer { session.invalidateAndCancel() }
    let dataTask = Locked<OfflineDataTask?>(nil)
    session.offline.withLock { $0 = { task in dataTask.withLock { $0 = task } } }
    let client = QuoteClient(baseURL: server.url("/"), session: session)
    let handle = Locked<Task<Data, any Error>?>(nil)
    // Inside fetch(_:), the moment the data task exists and before it is handed back: the
    // task is cancelled right there.
    session.afterCreating.withLock {
      $0 = {
        if withUnsafeCurrentTask(body: { $0 }) != nil {
          withUnsafeCurrentTask { $0?.cancel() }
        } else {
          handle.value?.cancel()
        }
      }
    }

    let task = Task { try await client.fetch("/hang") }
    handle.withLock { $0 = task }
    if !(await eventually { session.created.value > 0 || server.requests.count > 0 }) {
      task.cancel()
    }
    if session.created.value == 0 {
      // The answer does not go through fetch(_:completion:): nothing was created to race.
      task.cancel()
    }
    await #expect(
      throws: CancellationError.self,
      "the task was cancelled: fetch(_:) must throw CancellationError"
    ) {
      try await withDeadline(
        .seconds(2), "fetch(\"/hang\"), cancelled while its data task was being created",
        hint: "the cancel came after the data task was created and before fetch(_:) had it "
          + "in hand, and it was lost: nothing cancelled the data task, so the request runs "
          + "on"
      ) {
        try await task.value
      }
    }
    _ = await expectDataTaskCancelled(dataTask.value, "while its data task was being created")
  }

  @Test("A cancel that lands just as fetch(_:) stores its data task is never lost")
  func cancelWhileStoring() async throws {
    let server = try startedServer(["/hang": .hang])
    defer { server.stop() }
    let session = ScriptedSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)
    // The data tasks never reach the network: each round, the task is cancelled from another
    // thread a tuned time after the data task's resume() (see RaceAimer), so the cancel
    // lands around the moment fetch(_:) checks for it and stores the data task. A check and
    // a store under two separate locks lose the cancel between them within a few hundred
    // rounds; a correct answer cancels the data task in every round.
    let aimer = RaceAimer()
    defer { aimer.stop() }
    let current = Locked<Task<Data, any Error>?>(nil)
    let dataTask = Locked<OfflineDataTask?>(nil)
    session.offline.withLock {
      $0 = { task in
        dataTask.withLock { $0 = task }
        aimer.anchor { current.value?.cancel() }
      }
    }
    // The learner's call runs on a thread of its own, which the aimer can pin.
    let executor = OneThreadExecutor()

    // So many rounds, or so much time: a machine too busy to finish the rounds does fewer,
    // which can let a gap go unseen but never fails a correct answer.
    let rounds = stressAmount(grading: 1_500, verify: 5_000)
    let budget: Duration = stressAmount(grading: .milliseconds(1_500), verify: .seconds(6))
    let clock = ContinuousClock()
    let end = clock.now + budget
    for round in 1...rounds where clock.now < end {
      let (go, open) = AsyncStream.makeStream(of: Void.self)
      let task = Task(executorPreference: executor) {
        for await _ in go { break }
        return try await client.fetch("/hang")
      }
      current.withLock { $0 = task }
      dataTask.withLock { $0 = nil }
      open.yield()
      if round == 1 {
        // An answer that does not call fetch(_:completion:) creates nothing to race against.
        guard await eventually({ session.created.value > 0 }) else {
          task.cancel()
          _ = await task.result
          return
        }
      }
      let outcome = try await withDeadline(
        .seconds(2), "fetch(\"/hang\"), cancelled as it stored its data task (round \(round))",
        hint: "the cancel landed just after the data task was resumed, while fetch(_:) was "
          + "storing it, and it was lost: the cancel found no data task to cancel, and "
          + "fetch(_:) had already looked and found no cancel, so nobody cancelled the data "
          + "task and the request runs on"
      ) {
        await task.result
      }
      guard case .failure(let error) = outcome, error is CancellationError else {
        Issue.record(
          Comment(
            rawValue: "fetch(_:) was cancelled (round \(round)) and ended with \(outcome): a "
              + "cancelled call must throw CancellationError"))
        return
      }
      guard await expectDataTaskCancelled(dataTask.value, "round \(round)") else { return }
      if let byLearner = dataTask.value?.cancelledByResumer {
        aimer.learn(actionCameFirst: byLearner)
      }
    }
  }

  /// Records an issue, and says false, unless a cancelled call's data task was cancelled
  /// too: a call that resumes its caller on a cancel and leaves the data task running ends
  /// in time, and its request runs on with nobody waiting for it.
  private func expectDataTaskCancelled(
    _ dataTask: OfflineDataTask?, _ when: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async -> Bool {
    if await eventually({ dataTask?.isCompleted ?? true }) { return true }
    Issue.record(
      Comment(
        rawValue: "fetch(_:) was cancelled (\(when)) and ended, but its data task was never "
          + "cancelled: the request runs on with nobody waiting for it, holding its "
          + "connection"), sourceLocation: sourceLocation)
    return false
  }

  @Test("An answer that arrives just as the task is cancelled is not returned")
  func lateAnswerAfterCancel() async throws {
    let server = try startedServer(["/quote": .hang])
    defer { server.stop() }
    // Offline data tasks, which the test completes itself: the answer is in, and before the
    // completion handler gets it, the task is cancelled.
    let session = ScriptedSession()
    defer { session.invalidateAndCancel() }
    let pending = Locked<OfflineDataTask?>(nil)
    session.offline.withLock { $0 = { task in pending.withLock { $0 = task } } }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    for (body, status) in [("too late", 200), ("internal error", 500)] {
      pending.withLock { $0 = nil }
      let task = Task { try await client.fetch("/quote") }
      guard await eventually({ pending.value != nil }), let dataTask = pending.value else {
        // The answer does not go through fetch(_:completion:): nothing to answer late.
        task.cancel()
        _ = await task.result
        return
      }
      dataTask.complete(with: body, status: status) { task.cancel() }
      let outcome = try await withDeadline(
        .seconds(2), "fetch(\"/quote\"), cancelled as its answer (\(status)) arrived",
        hint: "a completion that comes after the cancel never resumes the continuation"
      ) {
        await task.result
      }
      if case .failure(let error) = outcome, error is CancellationError { continue }
      Issue.record(
        Comment(
          rawValue: "the task was cancelled before fetch(\"/quote\") returned (the answer, a "
            + "\(status), arrived at that very moment), and fetch(_:) gave \(outcome) instead "
            + "of throwing CancellationError: a caller that cancelled has gone away, and must "
            + "not get a result or a server error after its cancel"))
    }
  }

  @Test("Each call has its own data task: a cancel or a failure does not spill into another")
  func callsDoNotShareState() async throws {
    let server = try startedServer([
      "/hang": .hang, "/slow": .slowHeaders(.milliseconds(300), "second"),
      "/quote": .ok("third"), "/broken": .status(500),
    ])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    // Two calls at once on one client; the first is cancelled.
    let first = Task { try await client.fetch("/hang") }
    let second = Task { try await client.fetch("/slow") }
    #expect(await requestArrived(server, "/hang"), "fetch(\"/hang\") should send its request")
    #expect(await requestArrived(server, "/slow"), "fetch(\"/slow\") should send its request")
    first.cancel()
    let secondOutcome = try await withDeadline(
      .seconds(2), "fetch(\"/slow\") beside a cancelled call",
      hint: "the call nobody cancelled never finished"
    ) {
      await second.result
    }
    if case .failure(let error) = secondOutcome {
      Issue.record(
        Comment(
          rawValue: "two calls ran at once on one client and only the first was cancelled, "
            + "but the second threw \(error): the state of one call (its data task, its "
            + "cancel) must belong to that call, or cancelling one screen's request breaks "
            + "another's"))
    } else if case .success(let data) = secondOutcome {
      #expect(
        String(decoding: data, as: UTF8.self) == "second",
        "fetch(\"/slow\"), beside a cancelled call, must return its own body, \"second\"")
    }
    let firstOutcome = try await withDeadline(
      .seconds(2), "fetch(\"/hang\") after its task was cancelled, beside another call",
      hint: "cancelling one of two calls at once did not cancel that call's own data task: "
        + "the cancel reached another call's task, or none"
    ) {
      await first.result
    }
    #expect(
      throws: CancellationError.self,
      "the first call was cancelled: it must throw CancellationError"
    ) { try firstOutcome.get() }
    #expect(
      await eventually { server.abandoned.contains("/hang") },
      "the cancelled call's request kept running: the server never saw its connection close")
    #expect(
      !server.abandoned.contains("/slow"),
      "the call nobody cancelled had its request cancelled: a cancel reached the wrong data task")

    // Calls after a cancelled one and after a failed one.
    _ = await Result { try await client.fetch("/broken") }
    let later = await Result {
      try await withDeadline(
        .seconds(2), "fetch(\"/quote\") after a cancelled and a failed call",
        hint: "a call after a cancelled one never resumes"
      ) {
        try await client.fetch("/quote")
      }
    }
    switch later {
    case .success(let data):
      #expect(String(decoding: data, as: UTF8.self) == "third", "return the body")
    case .failure(let error):
      Issue.record(
        Comment(
          rawValue: "a call made after one was cancelled and one failed threw \(error): a "
            + "cancel or a failure ends that one call, and every later call must start "
            + "afresh"))
    }
  }

  @Test("A path with a query reaches the server as that path with that query")
  func pathWithAQuery() async throws {
    let server = try startedServer(["/quote": .ok("quote 7")])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    let outcome = try await withDeadline(.seconds(2), "fetch(\"/quote?id=7\")") {
      await Result { try await client.fetch("/quote?id=7") }
    }

    let asked = server.requestHeads.first?.split(separator: "\r\n").first.map(String.init) ?? ""
    #expect(
      (try? outcome.get()).map { String(decoding: $0, as: UTF8.self) } == "quote 7",
      """
      fetch("/quote?id=7") ended with \(outcome), and the server was asked "\(asked)": the \
      path is resolved against the base URL as the legacy call does it, query and all; \
      adding it as a path component escapes the "?" into the path
      """)
  }

  @Test("A request that fails is sent once: fetch(_:) reports the failure, it does not try again")
  func aFailureIsNotRetried() async throws {
    let server = try startedServer()
    defer { server.stop() }
    // The first request for "/flaky" is dropped; a second one would succeed.
    server.route("/flaky", [.dropped(payload(4000), after: 1000), .ok("second try")])
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    let outcome = try await withDeadline(.seconds(4), "fetch(\"/flaky\")") {
      await Result { try await client.fetch("/flaky") }
    }

    let sent = server.requests.filter { $0 == "/flaky" }.count
    #expect(
      sent == 1,
      """
      one call of fetch("/flaky") sent \(sent) requests, and ended with \(outcome): a failed \
      request is the call's answer, thrown as the session reported it; trying again is the \
      caller's choice, not fetch's
      """)
    #expect(throws: URLError.self, "the request was dropped: throw the session's error") {
      try outcome.get()
    }
  }

  @Test("Two calls for the same path at once: cancelling one leaves the other to finish")
  func samePathTwiceOneCancelled() async throws {
    let server = try startedServer(["/slow": .slowHeaders(.milliseconds(400), "slow")])
    defer { server.stop() }
    let session = makeSession()
    defer { session.invalidateAndCancel() }
    let client = QuoteClient(baseURL: server.url("/"), session: session)

    let cancelled = Task { try await client.fetch("/slow") }
    let kept = Task { try await client.fetch("/slow") }
    let both = await eventually { server.requests.filter { $0 == "/slow" }.count == 2 }
    try #require(both, "two calls of fetch(\"/slow\") should send two requests")
    cancelled.cancel()

    let outcome = try await withDeadline(
      .seconds(2), "fetch(\"/slow\") beside a cancelled call for the same path"
    ) {
      await kept.result
    }
    _ = await cancelled.result
    #expect(
      (try? outcome.get()).map { String(decoding: $0, as: UTF8.self) } == "slow",
      """
      two calls asked for "/slow" at once and only one was cancelled, yet the other ended \
      with \(outcome): a cancel belongs to its own call's data task, not to every request for \
      the same URL
      """)
  }

  @Test("A cancelled fetch(_:) ends only once its data task has reported back")
  func cancelEndsWithTheDataTask() async throws {
    let server = try startedServer(["/hang": .hang])
    defer { server.stop() }
    // Offline data tasks whose cancel is held: the data task is cancelled, and its completion
    // (URLError(.cancelled)) does not run until the test lets it, as a real request may take
    // a while to wind down.
    let session = ScriptedSession()
    defer { session.invalidateAndCancel() }
    let pending = Locked<OfflineDataTask?>(nil)
    session.offline.withLock {
      $0 = { task in
        task.holdsCancel.withLock { $0 = true }
        pending.withLock { $0 = task }
      }
    }
    let client = QuoteClient(baseURL: server.url("/"), session: session)
    let reportedBack = Locked(false)
    // Whether the data task had reported back when fetch(_:) ended; nil until it ends.
    let endedAfterReport = Locked<Bool?>(nil)
    let task = Task {
      let outcome = await Result { try await client.fetch("/hang") }
      endedAfterReport.withLock { $0 = reportedBack.value }
      return try outcome.get()
    }
    guard await eventually({ pending.value != nil }), let dataTask = pending.value else {
      // The answer does not go through fetch(_:completion:): nothing to hold.
      task.cancel()
      _ = await task.result
      return
    }
    task.cancel()
    guard await eventually({ dataTask.isCompleted }) else {
      // The cancel never reached the data task: `cancellationReachesTheServer` says so. End
      // the request here, so that the call ends too.
      dataTask.holdsCancel.withLock { $0 = false }
      dataTask.cancel()
      _ = try await withDeadline(.seconds(2), "fetch(\"/hang\") after cancel") {
        await task.result
      }
      return
    }
    // A call that ends without waiting for the data task ends now; one that waits does not.
    _ = await eventually(within: .seconds(1)) { endedAfterReport.value != nil }
    reportedBack.withLock { $0 = true }
    dataTask.releaseCancel()
    let outcome = try await withDeadline(
      .seconds(2), "fetch(\"/hang\") after cancel, once its data task reported back",
      hint: "the cancelled data task's completion (URLError(.cancelled)) never resumes the "
        + "continuation"
    ) {
      await task.result
    }
    #expect(
      endedAfterReport.value != false,
      Comment(
        rawValue: "fetch(\"/hang\") was cancelled, its data task was cancelled, and it ended "
          + "with \(outcome) before the data task had reported back (its completion, with "
          + "URLError(.cancelled), had not run yet): the caller was answered as the cancel "
          + "came, not when the request was over, so it moves on while the request may still "
          + "be open, and the completion then runs for nobody"))
  }
}
