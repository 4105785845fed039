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

@Suite("9.4 Keep the old API")
struct KeepTheOldAPITests {
  @Test("The completion gets the forecast, once")
  func successOnce() async throws {
    let server = try startedServer(["/forecast/oslo": .ok("snow")])
    defer { server.stop() }
    let session = makeSession()
    let calls = Calls([])

    service(server, session).forecast(for: "oslo") { result in
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
    let server = try startedServer(["/forecast/oslo": .status(500, "internal error")])
    defer { server.stop() }
    let session = makeSession()
    let calls = Calls([])

    service(server, session).forecast(for: "oslo") { result in
      calls.withLock { $0.append(result) }
    }
    let called = await eventually { !calls.value.isEmpty }
    #expect(
      called,
      Comment(
        rawValue: "the completion was never called for a 500: the failure path never calls "
          + "back; call it with .failure(error)"))
    try await Task.sleep(for: .milliseconds(50))
    let results = calls.value
    #expect(
      results.count <= 1,
      "called back \(results.count) times: the completion must be called exactly once")
    if case .failure(let error)? = results.first {
      #expect(
        error as? ForecastUnavailable == ForecastUnavailable(status: 500),
        "pass the async API's error on unchanged, got \(error)")
    } else if let first = results.first {
      Issue.record("the server answered 500: expected .failure, got \(first)")
    }
  }

  @Test("cancel() cancels the request and the completion is never called")
  func cancelNeverCallsBack() async throws {
    let server = try startedServer(["/forecast/oslo": .hang])
    defer { server.stop() }
    let session = makeSession()
    let calls = Calls([])

    let request = service(server, session).forecast(for: "oslo") { result in
      calls.withLock { $0.append(result) }
    }
    #expect(
      await requestArrived(server, "/forecast/oslo"), "the request should have been sent")
    request.cancel()

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
    let server = try startedServer([
      "/forecast/oslo": .ok("snow"), "/forecast/rome": .status(500), "/forecast/lima": .hang,
    ])
    defer { server.stop() }
    let session = makeSession()
    let weather = service(server, session)
    let calls = Locked<[String: Int]>([:])

    var cancelled: [ForecastRequest] = []
    for round in 0..<5 {
      for city in ["oslo", "rome", "lima"] {
        let request = weather.forecast(for: city) { _ in
          calls.withLock { $0["\(city)-\(round)", default: 0] += 1 }
        }
        if city == "lima" { cancelled.append(request) }
      }
    }
    #expect(
      await eventually { server.requests.filter { $0 == "/forecast/lima" }.count == 5 },
      "every request should have been sent")
    for request in cancelled { request.cancel() }
    let finished = await eventually { calls.value.count >= 10 }
    #expect(finished, "every request that was not cancelled should call back")
    try await Task.sleep(for: .milliseconds(50))
    let counts = calls.value
    #expect(
      counts.values.allSatisfy { $0 == 1 },
      "each completion must be called exactly once: \(counts.filter { $0.value != 1 })")
    #expect(
      counts.keys.allSatisfy { !$0.hasPrefix("lima") },
      "a cancelled request must never call its completion")
  }
}
