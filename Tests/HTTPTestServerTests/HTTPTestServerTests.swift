import Foundation
import HTTPTestServer
import Testing
import WorkbookTesting

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A GET with a session of its own; the body, the status, or the error.
private func get(_ url: URL) async -> Result<(Data, Int), any Error> {
  let session = URLSession(configuration: .ephemeral)
  defer { session.finishTasksAndInvalidate() }
  do {
    let (data, response) = try await session.data(from: url)
    return .success((data, (response as? HTTPURLResponse)?.statusCode ?? 0))
  } catch {
    return .failure(error)
  }
}

@Suite("HTTPTestServer")
struct HTTPTestServerTests {
  @Test("Answers a route with its body and an unknown path with 404")
  func routes() async throws {
    let server = try HTTPTestServer(["/a": .ok("alpha")]).start()
    defer { server.stop() }

    let a = try await withDeadline(.seconds(2), "GET /a") { await get(server.url("/a")) }.get()
    #expect(String(decoding: a.0, as: UTF8.self) == "alpha")
    #expect(a.1 == 200)
    let missing = try await withDeadline(.seconds(2), "GET /b") { await get(server.url("/b")) }
      .get()
    #expect(missing.1 == 404)
    server.route("/a", .status(500, "broken"))
    let broken = try await withDeadline(.seconds(2), "GET /a again") {
      await get(server.url("/a?x=1"))
    }.get()
    #expect(broken.1 == 500)
    #expect(server.requests == ["/a", "/b", "/a"])
  }

  @Test("A truncated, a dropped and an oversized body")
  func misbehaviour() async throws {
    let body = [UInt8](repeating: 65, count: 4000)
    let server = try HTTPTestServer([
      "/truncated": .truncated(body, after: 1000), "/dropped": .dropped(body, after: 1000),
      "/oversized": .oversized(body, announced: 100),
    ]).start()
    defer { server.stop() }

    for path in ["/truncated", "/dropped"] {
      let result = try await withDeadline(.seconds(2), "GET \(path)") {
        await get(server.url(path))
      }
      #expect(throws: URLError.self, "\(path) must fail") { try result.get() }
    }
    let oversized = try await withDeadline(.seconds(2), "GET /oversized") {
      await get(server.url("/oversized"))
    }.get()
    #expect(oversized.0.count == 100, "the client reads only what was announced")
  }

  @Test("A client that gives up shows in abandoned, and no connection stays open")
  func abandoned() async throws {
    let server = try HTTPTestServer(["/hang": .hang]).start()
    defer { server.stop() }
    let session = URLSession(configuration: .ephemeral)
    defer { session.invalidateAndCancel() }

    let task = session.dataTask(with: server.url("/hang"))
    task.resume()
    #expect(await eventually { server.requests == ["/hang"] })
    #expect(server.openConnections == 1)
    task.cancel()
    #expect(await eventually { server.abandoned == ["/hang"] }, "the server sees the close")
    #expect(await eventually { server.openConnections == 0 })
  }

  @Test("stop() closes held connections promptly")
  func stopCloses() async throws {
    let server = try HTTPTestServer(["/hang": .hang]).start()
    let session = URLSession(configuration: .ephemeral)
    defer { session.invalidateAndCancel() }

    let result = Task { await get(server.url("/hang")) }
    #expect(await eventually { server.openConnections == 1 })
    server.stop()
    let outcome = try await withDeadline(.seconds(2), "GET /hang after stop()") {
      await result.value
    }
    #expect(throws: URLError.self, "the client sees the connection go") { try outcome.get() }
    #expect(await eventually { server.openConnections == 0 })
  }

  @Test("A sequence of answers, one per request, the last one repeated; arrival times")
  func sequence() async throws {
    let server = try HTTPTestServer().start()
    defer { server.stop() }
    server.route("/n", [.ok("1"), .status(503), .ok("3")])

    var seen: [String] = []
    for round in 0..<4 {
      let (data, status) = try await withDeadline(.seconds(2), "GET /n, round \(round)") {
        await get(server.url("/n"))
      }.get()
      seen.append("\(status) \(String(decoding: data, as: UTF8.self))")
    }
    #expect(seen == ["200 1", "503 ", "200 3", "200 3"])
    let arrivals = server.arrivals
    #expect(arrivals.map(\.path) == ["/n", "/n", "/n", "/n"])
    #expect(zip(arrivals, arrivals.dropFirst()).allSatisfy { $0.time <= $1.time })
  }

  @Test("A body of unknown size: chunked, with no Content-Length")
  func unsized() async throws {
    let body = (0..<5000).map { UInt8(truncatingIfNeeded: $0) }
    let server = try HTTPTestServer([
      "/chunked": .unsized(body, pieces: 3, every: .milliseconds(10)),
      "/empty": .unsized([]),
    ]).start()
    defer { server.stop() }

    let session = URLSession(configuration: .ephemeral)
    defer { session.finishTasksAndInvalidate() }
    let (data, response) = try await withDeadline(.seconds(2), "GET /chunked") {
      try await session.data(from: server.url("/chunked"))
    }
    #expect(data == Data(body))
    #expect(response.expectedContentLength == -1, "no length was announced")
    let (empty, _) = try await withDeadline(.seconds(2), "GET /empty") {
      try await session.data(from: server.url("/empty"))
    }
    #expect(empty.isEmpty)
  }
}
