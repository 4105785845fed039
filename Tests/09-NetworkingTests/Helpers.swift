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
/// between tests; `invalidateAndCancel()` it at the end.
func makeSession(delegate: (any URLSessionDelegate)? = nil) -> URLSession {
  let configuration = URLSessionConfiguration.ephemeral
  configuration.timeoutIntervalForRequest = 10
  return URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
}

/// `count` bytes of a recognisable pattern.
func payload(_ count: Int) -> [UInt8] {
  (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
}

/// Waits (bounded) until the server has received a request for `path`.
func requestArrived(_ server: HTTPTestServer, _ path: String) async -> Bool {
  await eventually { server.requests.contains(path) }
}
