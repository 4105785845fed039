import Foundation
import HTTPTestServer
import Testing
import WorkbookTesting

@testable import Networking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every call of a legacy completion, in order.
private typealias Calls = Locked<[Result<String, any Error>]>

private func service(_ server: HTTPTestServer, _ session: URLSession) -> WeatherService {
  WeatherService(baseURL: server.url("/"), session: session)
}

/// What ``request(_:_:completion:)`` throws when the old API did not return.
private struct DidNotReturn: Error, CustomStringConvertible {
  var description: String { "forecast(for:completion:) did not return" }
}

/// Calls the old API from a thread of its own, as an old call site would, and returns its
/// request; a call that has not returned within a second (it waits for the forecast, say)
/// fails the test with a message instead of holding up the test.
@discardableResult
private func request(
  _ weather: WeatherService, _ city: String,
  completion: @escaping @Sendable (Result<String, any Error>) -> Void
) async throws -> ForecastRequest {
  let returned = Locked<ForecastRequest?>(nil)
  let caller = Thread {
    let request = weather.forecast(for: city, completion: completion)
    returned.withLock { $0 = request }
  }
  caller.name = "an old call site"
  caller.start()
  guard await eventually(within: .seconds(1), { returned.value != nil }),
    let request = returned.value
  else {
    Issue.record(
      Comment(
        rawValue: "forecast(for: \"\(city)\", completion:) had not returned a second after it "
          + "was called: it waits for the forecast before returning, so the caller is stuck "
          + "(a screen frozen), and cannot cancel a request it does not have yet; the old API "
          + "returns its request at once and calls back later"))
    throw DidNotReturn()
  }
  return request
}

/// Blocks the calling thread until `semaphore` is signalled.
private func waitFor(_ semaphore: DispatchSemaphore) { semaphore.wait() }

/// The contract of `forecast(for:completion:)`, path by path, and the test that pins each
/// cell ("—": does not apply, and why).
///
/// | path | completion gets | released | calls | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | forecast | `.success(text)`: `successOnce` | — (the async call owns its request) | once: `successOnce` | returns its request at once, holds no thread while the forecast comes: `returnsAtOnce`; any thread, the main one not needed: `cancelAfterTheForecastArrived` |
/// | failure | `.failure` with the async API's own error: `failureOnce` | — (as a forecast) | once, the request sent once (no retry): `failureOnce` | — (as a forecast) |
/// | the network fails (connection dropped) | `.failure` with the session's `URLError`: `transportFailureOnce` | — (the server closed it) | once, the request sent once (no retry): `transportFailureOnce` | — |
/// | the session cancels the request (invalidated), not the caller | `.failure` with the session's `URLError(.cancelled)`: `cancelledBySessionCallsBack` | — (the session closed it) | once: `cancelledBySessionCallsBack` | — |
/// | status codes | — (the async `forecast(for:)`, given, turns them into `ForecastUnavailable`) | — | — | — |
/// | cancel in flight | nothing: `cancelNeverCallsBack` | the request cancelled, server sees the close: `cancelNeverCallsBack` | never: `cancelNeverCallsBack` | — |
/// | cancel once the forecast (or a 500) is in, before the task awaiting it ran on | nothing, whatever the outcome's error: `cancelBeforeTheTaskRunsOn` | — (the request is over) | never: `cancelBeforeTheTaskRunsOn` | the session's hand-over held (`withPlainThreadJobsReordered`), the cancel in between: `cancelBeforeTheTaskRunsOn` |
/// | cancel once the forecast is in, before the completion ran | nothing: `cancelAfterTheForecastArrived`, `cancelWhileAnotherCompletionRuns` | — (the request is over) | never: `cancelAfterTheForecastArrived`, `cancelWhileAnotherCompletionRuns` | the completion held up (a busy main thread; another request's completion still running), the cancel in between: `cancelAfterTheForecastArrived`, `cancelWhileAnotherCompletionRuns` |
/// | cancel while the completion runs | — (it has started: it runs to its end) | — | once | cancel() returns without waiting for the running completion (which may be waiting for the cancelling thread): `cancelWhileTheCompletionRuns` |
/// | cancel between the last check and the call | — the contract is "cancelled first": a cancel that lands after the task decided to call back may still see the call, unless cancel() and the call are decided under one lock, taken before the call (an alternative does); a hop to another queue between the check and the call widens that gap: aimed at when the hop waits for the main thread or for another request's completion (above), not otherwise (not caught) | — | — | — |
/// | completions one at a time (a serial queue of their own) | — not promised either way: the completion is called on an arbitrary thread, and one that checks for a cancel in its turn is correct; one that checks before waiting its turn is caught above (`cancelWhileAnotherCompletionRuns`) | — | — | — |
/// | many requests, some cancelled; a request after a cancelled one | each its own outcome: `manyRequests`, `requestAfterACancelledOne` | — (as one request) | once each, cancelled never: `manyRequests` | — |
/// | listener leaving, second listener | — (a completion, not a stream) | — | — | — |
// One test at a time: two of them hold what the others' checks watch (the main thread, and
// jobs sent from threads that run no task), process-wide.
@Suite("9.4 Keep the old API", .serialized)
struct KeepTheOldAPITests {
  @Test("The completion gets the forecast, once")
  func successOnce() async throws {
    let server = try startedServer(["/forecast/oslo": .ok("snow")])
    defer { server.stop() }
    let session = makeSession()
    let calls = Calls([])

    try await request(service(server, session), "oslo") { result in
      calls.withLock { $0.append(result) }
    }
    let called = await eventually { !calls.value.isEmpty }
    #expect(called, "the completion was never called: call it with .success(forecast)")
    // Give a second call the time to show itself.
    try await Task.sleep(for: .milliseconds(50))
    let results = calls.value
    #expect(
      results.count <= 1,
      "called back \(results.count) times: the completion must be called exactly once")
    if case .success(let text)? = results.first {
      #expect(text == "snow", "pass the forecast on unchanged")
    } else if let first = results.first {
      Issue.record("expected .success(\"snow\"), got \(first)")
    }
  }

  @Test("A 500 calls back once with the async API's error")
  func failureOnce() async throws {
    try await expectOneFailure(
      answered: .status(500, "internal error"),
      never: "the completion was never called for a 500: the failure path never calls back; "
        + "call it with .failure(error)",
      isExpected: { $0 as? ForecastUnavailable == ForecastUnavailable(status: 500) },
      expected: "the async API's error")
  }

  /// Requests the forecast of a server that answers `response`, and records an issue unless
  /// the completion is called exactly once, with a failure that `isExpected` accepts.
  private func expectOneFailure(
    answered response: HTTPTestResponse, never: String,
    isExpected: (any Error) -> Bool, expected: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    let server = try startedServer(["/forecast/oslo": response])
    defer { server.stop() }
    let session = makeSession()
    let calls = Calls([])

    try await request(service(server, session), "oslo") { result in
      calls.withLock { $0.append(result) }
    }
    let called = await eventually { !calls.value.isEmpty }
    #expect(called, Comment(rawValue: never), sourceLocation: sourceLocation)
    try await Task.sleep(for: .milliseconds(50))
    let results = calls.value
    #expect(
      results.count <= 1,
      "called back \(results.count) times: the completion must be called exactly once",
      sourceLocation: sourceLocation)
    // Once the completion has its failure, every request of the call has reached the server.
    let sent = server.requests.filter { $0 == "/forecast/oslo" }.count
    #expect(
      !called || sent == 1,
      Comment(
        rawValue: "one call of the old API, and the server got \(sent) requests: a failed "
          + "request was sent again before the completion heard of it; the old API sends its "
          + "request once and hands the failure on as it is (a request sent twice is work the "
          + "caller never asked for, and the completion then reports another attempt, later)"),
      sourceLocation: sourceLocation)
    if case .failure(let error)? = results.first {
      #expect(
        isExpected(error), "pass \(expected) on unchanged, got \(error)",
        sourceLocation: sourceLocation)
    } else if let first = results.first {
      Issue.record("expected .failure, got \(first)", sourceLocation: sourceLocation)
    }
  }

  @Test("A request the network fails calls back once, with the session's error")
  func transportFailureOnce() async throws {
    try await expectOneFailure(
      answered: .dropped(payload(4000), after: 1000),
      never: "the server dropped the connection mid-answer, and the completion was never "
        + "called: every error the async call throws must reach the completion, not only "
        + "ForecastUnavailable (only a cancel by the handle stays silent)",
      isExpected: { $0 is URLError }, expected: "the session's error (a URLError)")
  }

  @Test("A request its session cancelled, not its caller, calls back once with that error")
  func cancelledBySessionCallsBack() async throws {
    let server = try startedServer(["/forecast/oslo": .hang])
    defer { server.stop() }
    let session = makeSession()
    let calls = Calls([])

    try await request(service(server, session), "oslo") { result in
      calls.withLock { $0.append(result) }
    }
    let sent = await requestArrived(server, "/forecast/oslo")
    #expect(sent, "the request should have been sent")
    guard sent else { return }
    // The app lets go of the session (a user logs out): its tasks end with
    // URLError(.cancelled), though no caller cancelled its request.
    session.invalidateAndCancel()
    let called = await eventually { !calls.value.isEmpty }
    #expect(
      called,
      Comment(
        rawValue: "the session cancelled its tasks (invalidateAndCancel(), at a log-out say) "
          + "while the request was in flight, and the completion was never called: the "
          + "caller did not cancel, so it waits for its completion (a spinner that never "
          + "stops); the request failed with the session's URLError(.cancelled), and only "
          + "the caller's own cancel() stays silent, whatever error a request ends with"))
    try await Task.sleep(for: .milliseconds(50))
    let results = calls.value
    #expect(
      results.count <= 1,
      "called back \(results.count) times: the completion must be called exactly once")
    if case .success(let text)? = results.first {
      Issue.record("expected the session's error, got .success(\"\(text)\")")
    }
  }

  @Test("cancel() cancels the request and the completion is never called")
  func cancelNeverCallsBack() async throws {
    let server = try startedServer(["/forecast/oslo": .hang])
    defer { server.stop() }
    let session = makeSession()
    let calls = Calls([])

    let pending = try await request(service(server, session), "oslo") { result in
      calls.withLock { $0.append(result) }
    }
    let sent = await requestArrived(server, "/forecast/oslo")
    #expect(sent, "the request should have been sent")
    // Nothing went out: there is no request to cancel, and waiting on would only add time.
    guard sent else { return }
    pending.cancel()

    let closed = await eventually { server.abandoned.contains("/forecast/oslo") }
    #expect(
      closed,
      Comment(
        rawValue: "cancel() must cancel the task that runs the async call (so its URLSession "
          + "task is cancelled): the server never saw the connection close"))
    try await Task.sleep(for: .milliseconds(50))
    let results = calls.value
    #expect(
      results.isEmpty,
      Comment(
        rawValue: "called back after cancel() with \(results): a cancelled request must never "
          + "call its completion (check Task.isCancelled before calling back)"))
  }

  @Test("Many requests: each completion once, and cancelled ones never")
  func manyRequests() async throws {
    // Every answer comes a second late, when all 15 requests are out: an answer that
    // cancels another request just as that one's response completes would deadlock
    // FoundationNetworking on Linux (a lock-order bug of its own: swift-corelibs-foundation
    // issue 5412), and the test would blame a blocked pool instead of the cancel.
    let server = try startedServer([
      "/forecast/oslo": .slowHeaders(.seconds(1), "snow"),
      "/forecast/rome": HTTPTestResponse(status: 500, headerDelay: .seconds(1)),
      "/forecast/lima": .hang,
    ])
    defer { server.stop() }
    // 15 requests at once, 5 of which never end, and 10 that answer a second late: room for
    // all of them at once (a session allows 6 connections to a host by default, and the
    // requests beyond would wait their turn).
    let session = makeSession(connectionsPerHost: 16)
    let weather = service(server, session)
    let calls = Locked<[String: Int]>([:])

    var cancelled: [ForecastRequest] = []
    var made: [ForecastRequest] = []
    // However the test ends, no request of its own is left in flight when the server stops
    // (defers run last first): a request cancelled while the server drops its connection
    // could meet FoundationNetworking's lock-order bug, and a later test would be blamed.
    defer { for request in made { request.cancel() } }
    for round in 0..<5 {
      for city in ["oslo", "rome", "lima"] {
        let pending = try await request(weather, city) { _ in
          calls.withLock { $0["\(city)-\(round)", default: 0] += 1 }
        }
        made.append(pending)
        if city == "lima" { cancelled.append(pending) }
      }
    }
    let sent = await eventually { server.requests.filter { $0 == "/forecast/lima" }.count == 5 }
    let limas = server.requests.filter { $0 == "/forecast/lima" }.count
    #expect(
      sent,
      Comment(
        rawValue: limas == 0
          ? "every request should have been sent, and none for lima was"
          : "15 requests were made, and only \(limas) of the 5 for lima reached the server: "
            + "the others were cancelled or dropped before they went out; each request is its "
            + "own, and only its own cancel() may silence it (a newer request must not)"))
    // Nothing went out: waiting for answers would only add time to a run that has failed.
    guard sent else { return }
    for request in cancelled { request.cancel() }
    let finished = await eventually(within: .seconds(3)) { calls.value.count >= 10 }
    let missing = (0..<5).flatMap { round in ["oslo-\(round)", "rome-\(round)"] }
      .filter { calls.value[$0] == nil }
    #expect(
      finished,
      Comment(
        rawValue: "15 requests were made, 5 of them cancelled by their callers, and these "
          + "others never called back: \(missing); each request is its own, and only its "
          + "own cancel() may silence it (a newer request, or another caller's cancel, "
          + "must not)"))
    try await Task.sleep(for: .milliseconds(50))
    let counts = calls.value
    #expect(
      counts.values.allSatisfy { $0 == 1 },
      "each completion must be called exactly once: \(counts.filter { $0.value != 1 })")
    #expect(
      counts.keys.allSatisfy { !$0.hasPrefix("lima") },
      "a cancelled request must never call its completion")
  }

  @Test("forecast(for:completion:) returns its request at once and holds no thread meanwhile")
  func returnsAtOnce() async throws {
    let server = try startedServer(["/forecast/oslo": .slowHeaders(.seconds(2), "fog")])
    defer { server.stop() }
    let session = makeSession()
    let calls = Calls([])

    // Slower than the pool check's patience (1.5 s): a call that waits for the forecast
    // before returning, or any task that blocks a thread meanwhile, is seen doing so.
    try await request(service(server, session), "oslo") { result in
      calls.withLock { $0.append(result) }
    }
    let called = try await withDeadline(
      .seconds(5), "the completion of a slow forecast",
      hint: "the completion was never called for a forecast that came after 2 seconds"
    ) {
      await eventually(within: .seconds(4)) { !calls.value.isEmpty }
    }
    #expect(called, "the completion was never called: call it with .success(forecast)")
    if case .success(let text)? = calls.value.first {
      #expect(text == "fog", "pass the forecast on unchanged")
    }
  }

  @Test("A cancel() that comes once the forecast is in, before the completion ran, still wins")
  func cancelAfterTheForecastArrived() async throws {
    let server = try startedServer(["/forecast/oslo": .ok("sun")])
    defer { server.stop() }
    let session = makeSession()
    let calls = Calls([])

    // The main thread is busy (a long layout pass, say) while the forecast comes in.
    let mainBusy = DispatchSemaphore(value: 0)
    let mainHeld = Locked(false)
    DispatchQueue.main.async {
      mainHeld.withLock { $0 = true }
      waitFor(mainBusy)
    }
    guard await eventually({ mainHeld.value }) else {
      // No main thread serving the main queue in this process: nothing to hold.
      mainBusy.signal()
      return
    }
    let pending = try await request(service(server, session), "oslo") { result in
      calls.withLock { $0.append(result) }
    }
    let answered = await eventually { server.answered.contains("/forecast/oslo") }
    // A correct answer calls back on whatever thread it is on: then there is no window
    // left for a cancel to fall into, and nothing more to check here.
    let calledBack = await eventually(within: .milliseconds(800)) { !calls.value.isEmpty }
    guard answered, !calledBack else {
      mainBusy.signal()
      return
    }
    // The forecast is in and the completion has not run: the caller cancels now.
    pending.cancel()
    mainBusy.signal()
    try await Task.sleep(for: .milliseconds(100))
    _ = await eventually(within: .milliseconds(200)) { !calls.value.isEmpty }
    let results = calls.value
    #expect(
      results.isEmpty,
      Comment(
        rawValue: "the forecast had arrived and the completion was waiting for the main "
          + "thread, which was busy; cancel() came meanwhile, and the completion was still "
          + "called, with \(results): whether the request was cancelled was decided before "
          + "the completion got to run, so a cancel in between was missed (and the old API "
          + "promises a completion on any thread, not one that waits for the main thread)"))
  }

  @Test("A cancel() that comes while another request's completion runs still wins")
  func cancelWhileAnotherCompletionRuns() async throws {
    let server = try startedServer([
      "/forecast/oslo": .ok("snow"), "/forecast/rome": .slowHeaders(.milliseconds(300), "sun"),
    ])
    defer { server.stop() }
    let weather = service(server, makeSession())
    let romeCalls = Calls([])
    let rome = Locked<ForecastRequest?>(nil)
    // Set by oslo's completion: whether it cancelled rome's request while rome's forecast
    // was in and rome's completion had not run (nil: it has not decided yet).
    let cancelledInTheGap = Locked<Bool?>(nil)

    // Oslo's completion is slow (a long job of the call site's), and while it runs, rome's
    // forecast comes in; a correct answer calls rome back meanwhile, on another thread. If
    // rome's completion has not run 800 ms after its forecast came, the caller cancels rome
    // from oslo's completion. The waits block this completion's own thread, briefly: no
    // task is needed to judge, even if every thread of the pool is held.
    try await request(weather, "oslo") { _ in
      let clock = ContinuousClock()
      let romeIn = clock.now + .seconds(3)
      while clock.now < romeIn, rome.value == nil || !server.answered.contains("/forecast/rome") {
        Thread.sleep(forTimeInterval: 0.005)
      }
      guard let romeRequest = rome.value, server.answered.contains("/forecast/rome") else {
        cancelledInTheGap.withLock { $0 = false }
        return
      }
      let grace = clock.now + .milliseconds(800)
      while clock.now < grace, romeCalls.value.isEmpty { Thread.sleep(forTimeInterval: 0.005) }
      guard romeCalls.value.isEmpty else {
        cancelledInTheGap.withLock { $0 = false }
        return
      }
      romeRequest.cancel()
      cancelledInTheGap.withLock { $0 = true }
    }
    let pending = try await request(weather, "rome") { result in
      romeCalls.withLock { $0.append(result) }
    }
    rome.withLock { $0 = pending }
    let decided = await eventually(within: .seconds(6)) { cancelledInTheGap.value != nil }
    // Oslo's completion never ran (the tests above name that), or rome called back in time:
    // no window left for a cancel to fall into, nothing to judge in this run.
    guard decided, cancelledInTheGap.value == true else { return }
    _ = await eventually(within: .milliseconds(300)) { !romeCalls.value.isEmpty }
    let results = romeCalls.value
    #expect(
      results.isEmpty,
      Comment(
        rawValue: "rome's forecast had arrived while oslo's completion was still running, and "
          + "rome's completion had not run 800 ms later; cancel() came then, and rome's "
          + "completion was still called, with \(results): it waited behind another "
          + "request's completion after deciding it was not cancelled, so a cancel in the "
          + "meantime was missed (completions are called on an arbitrary thread, not in turn "
          + "with each other)"))
  }

  @Test("cancel() returns at once while the completion runs, without waiting for it")
  func cancelWhileTheCompletionRuns() async throws {
    let server = try startedServer(["/forecast/oslo": .ok("snow")])
    defer { server.stop() }
    let session = makeSession()
    let running = Locked(false)
    // Set by the completion as it returns: whether cancel() had returned meanwhile.
    let sawCancelReturn = Locked<Bool?>(nil)
    let cancelReturned = DispatchSemaphore(value: 0)

    // The completion waits for the thread that cancels (a DispatchQueue.main.sync to
    // update a label, while the main thread cancels as its screen goes away), briefly:
    // the wait blocks its own thread only, and ends after a second whatever happens.
    let pending = try await request(service(server, session), "oslo") { _ in
      running.withLock { $0 = true }
      let returned = cancelReturned.wait(timeout: .now() + 1) == .success
      sawCancelReturn.withLock { $0 = returned }
    }
    // The completion never ran: the tests above name that.
    guard await eventually({ running.value }) else { return }
    let caller = Thread {
      pending.cancel()
      cancelReturned.signal()
    }
    caller.name = "a caller that cancels"
    caller.start()
    let finished = await eventually(within: .seconds(3)) { sawCancelReturn.value != nil }
    #expect(
      !finished || sawCancelReturn.value == true,
      Comment(
        rawValue: "cancel() was called from another thread while the completion was running, "
          + "and it did not return until the completion had: cancel() waits for something "
          + "the running completion holds (a lock the completion is called under), so a "
          + "completion that waits for the thread that cancels deadlocks, and so does one "
          + "that cancels its own request"))
  }

  @Test(
    "A cancel() that comes once the answer is in, before its task ran on with it, still wins",
    arguments: [200, 500])
  func cancelBeforeTheTaskRunsOn(status: Int) async throws {
    // A forecast, or a failure: either way the request is over and its outcome is not a
    // cancellation, so only the cancel itself can tell the task not to call back.
    let answer: HTTPTestResponse = status == 200 ? .ok("rain") : .status(500, "down")
    let server = try startedServer(["/forecast/oslo": answer])
    defer { server.stop() }
    let session = makeSession()
    let calls = Calls([])

    // Jobs sent from threads that run no task are held a while: among them the session's
    // hand-over of the forecast to the task awaiting it. So the forecast is in, and that
    // task has not run on, when cancel() comes: a success must be checked as a failure is.
    let cancelledInTheGap = try await withPlainThreadJobsReordered(window: .milliseconds(600)) {
      let pending = try await request(service(server, session), "oslo") { result in
        calls.withLock { $0.append(result) }
      }
      let answered = await eventually(within: .seconds(3)) {
        server.answered.contains("/forecast/oslo")
      }
      let handedOver = await eventually(within: .milliseconds(300)) { plainThreadJobsHeld() > 0 }
      let calledAlready = !calls.value.isEmpty
      pending.cancel()
      return answered && handedOver && !calledAlready
    }
    _ = await eventually(within: .milliseconds(300)) { !calls.value.isEmpty }
    // The session handed the forecast over only after the cancel (a busy machine): nothing
    // to judge in this run; the cancel then reached the request itself.
    guard cancelledInTheGap else { return }
    let results = calls.value
    #expect(
      results.isEmpty,
      Comment(
        rawValue: status == 200
          ? "the forecast had arrived, and cancel() came before the task that awaited it ran "
            + "on; the completion was still called, with \(results): a cancelled request never "
            + "calls back, whatever its outcome, a forecast that came just in time included"
          : "the server's 500 had arrived, and cancel() came before the task that awaited it "
            + "ran on; the completion was still called, with \(results): a cancelled request "
            + "never calls back, whatever its outcome, a failure that came just in time "
            + "included (its error is the server's, not a cancellation's: what the error is "
            + "cannot tell whether the caller cancelled)"))
  }

  @Test("A request made after another was cancelled still calls back")
  func requestAfterACancelledOne() async throws {
    let server = try startedServer(["/forecast/lima": .hang, "/forecast/oslo": .ok("snow")])
    defer { server.stop() }
    let weather = service(server, makeSession())
    let calls = Calls([])

    let cancelled = try await request(weather, "lima") { _ in }
    let sent = await requestArrived(server, "/forecast/lima")
    #expect(sent, "the request should have been sent")
    // Nothing went out: the tests above name that; waiting on would only add time.
    guard sent else { return }
    cancelled.cancel()
    _ = await eventually { server.abandoned.contains("/forecast/lima") }
    try await request(weather, "oslo") { result in calls.withLock { $0.append(result) } }
    #expect(
      await eventually { !calls.value.isEmpty },
      Comment(
        rawValue: "a request made after another one was cancelled never called back: a cancel "
          + "belongs to its own request, and must not silence the service's later ones"))
  }
}
