import Foundation
import HTTPTestServer
import Testing
import WorkbookTesting

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A test HTTP server on an ephemeral loopback port, already started.
func startedServer(_ routes: [String: HTTPTestResponse] = [:]) throws -> HTTPTestServer {
  try HTTPTestServer(routes).start()
}

/// A session of its own for one test (no cache, no cookies), so no connection is shared
/// between tests; `invalidateAndCancel()` it at the end. `connectionsPerHost` lifts the limit
/// of connections at once to one host (6 by default) for a test that needs more.
func makeSession(
  delegate: (any URLSessionDelegate)? = nil, connectionsPerHost: Int? = nil
) -> URLSession {
  let configuration = testConfiguration()
  if let connectionsPerHost { configuration.httpMaximumConnectionsPerHost = connectionsPerHost }
  return URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
}

/// An ephemeral configuration without a cache: FoundationNetworking looks a request up in
/// the cache on a queue of its own, and a task cancelled meanwhile (just after `resume()`)
/// now and then stops the process ("Trying to access a behaviour for a task that in not in
/// the registry"); without a cache, a cancel just after `resume()` is safe. (A cancel that
/// meets a request as it completes is another hazard: the tests cancel while a request
/// hangs, see `holdingTheNextPoll`.) The tests' requests are never cached anyway.
func testConfiguration() -> URLSessionConfiguration {
  let configuration = URLSessionConfiguration.ephemeral
  configuration.urlCache = nil
  configuration.timeoutIntervalForRequest = 10
  return configuration
}

/// `count` bytes of a recognisable pattern.
func payload(_ count: Int) -> [UInt8] {
  (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
}

/// Waits (bounded) until the server has received a request for `path`.
func requestArrived(_ server: HTTPTestServer, _ path: String) async -> Bool {
  await eventually { server.requests.contains(path) }
}

/// Statuses that mean success: every one from 200 to 299 (a 204 has no body).
let successStatuses = [200, 201, 202, 203, 204, 206, 299]

/// Statuses that do not: server errors, client errors, redirections without a place to go
/// (a 500 first, the one a check that is missing altogether is caught with).
let failureStatuses = [500, 404, 300, 304, 400, 401, 403, 418, 499, 502, 503, 599]

/// A route per status, at `/status/<code>`, answering that status with a short text body
/// (none for the statuses that carry none).
func statusRoutes(_ codes: [Int]) -> [String: HTTPTestResponse] {
  Dictionary(uniqueKeysWithValues: codes.map { ("/status/\($0)", .status($0, statusBody($0))) })
}

/// The body ``statusRoutes(_:)`` sends with `code`.
func statusBody(_ code: Int) -> String {
  [204, 304].contains(code) ? "" : "body of a \(code)"
}

/// Text with characters of two, three and four bytes in UTF-8.
let multibyteText = "Grüße aus Zürich, 東京 and 🌍: naïve café ✓"
