import Foundation
import HTTPTestServer
import Testing
import WorkbookTesting

@testable import Networking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Everything a download stream produced, or the error it threw.
private func collect(
  _ events: AsyncThrowingStream<DownloadEvent, any Error>, _ operation: String
) async throws -> [DownloadEvent] {
  try await withDeadline(
    .seconds(2), operation,
    hint: "the stream never ends: finish it from urlSession(_:task:didCompleteWithError:), "
      + "on success and on error"
  ) {
    var seen: [DownloadEvent] = []
    for try await event in events { seen.append(event) }
    return seen
  }
}

@Suite("9.2 Download with progress")
struct DownloadTests {
  @Test("Progress while the bytes arrive, then the file, then the end")
  func progressThenFile() async throws {
    let body = payload(64_000)
    let server = try startedServer([
      "/file": .slowBody(body, pieces: 4, every: .milliseconds(30))
    ])
    defer { server.stop() }

    let events = try await collect(download(from: server.url("/file")), "download(from:)")

    let progress = events.compactMap { event -> Int64? in
      if case .progress(let received, _) = event { return received }
      return nil
    }
    #expect(!progress.isEmpty, "yield .progress from urlSession(_:downloadTask:didWriteData:…)")
    #expect(progress == progress.sorted(), "progress should only go up: \(progress)")
    #expect(
      progress.last == Int64(body.count), "the last progress should count every byte: \(progress)")
    guard case .finished(let file)? = events.last else {
      Issue.record(
        "the last event should be .finished(file), got \(String(describing: events.last))")
      return
    }
    defer { try? FileManager.default.removeItem(at: file) }
    let contents = try? Data(contentsOf: file)
    #expect(
      contents == Data(body),
      Comment(
        rawValue: "the file at .finished's URL should hold the download: the session deletes "
          + "the file at `location` when didFinishDownloadingTo returns, so move it first"))
    #expect(
      events.dropLast().allSatisfy { if case .progress = $0 { true } else { false } },
      "only progress comes before .finished, and .finished comes once")
  }

  @Test("A 500 ends the stream with DownloadFailed, not with a file")
  func serverErrorThrows() async throws {
    let server = try startedServer(["/file": .status(500, "internal error")])
    defer { server.stop() }

    let error = await #expect(
      throws: DownloadFailed.self,
      Comment(
        rawValue: "the server answered 500: a 500 is not a success, throw "
          + "DownloadFailed(status: 500) (URLSession downloads the error page like any file: "
          + "check downloadTask.response's statusCode)")
    ) {
      _ = try await collect(download(from: server.url("/file")), "download(from:) of a 500")
    }
    #expect(error == DownloadFailed(status: 500), "throw the response's status code")
  }

  @Test("A connection dropped mid-download ends the stream with the session's error")
  func droppedConnectionThrows() async throws {
    let server = try startedServer(["/file": .dropped(payload(64_000), after: 20_000)])
    defer { server.stop() }

    await #expect(
      throws: URLError.self,
      Comment(
        rawValue: "the server dropped the connection after 20000 of 64000 bytes: the stream "
          + "must throw the session's error (finish(throwing:) in didCompleteWithError)")
    ) {
      _ = try await collect(
        download(from: server.url("/file")), "download(from:) of a dropped file")
    }
  }

  @Test("Stopping iterating cancels the download: the server sees the connection close")
  func stoppingCancels() async throws {
    let server = try startedServer(["/file": .stalls(payload(64_000), after: 16_000)])
    defer { server.stop() }

    try await withDeadline(
      .seconds(2), "the first progress of a stalled download",
      hint: "yield .progress from urlSession(_:downloadTask:didWriteData:…)"
    ) {
      for try await event in download(from: server.url("/file")) {
        if case .progress = event { break }
      }
    }
    let closed = await eventually { server.abandoned.contains("/file") }
    #expect(
      closed,
      Comment(
        rawValue: "the download kept running after the caller stopped listening: cancel the "
          + "download task from the stream's onTermination"))
  }

  @Test("Cancelling the iterating task ends the stream and the download")
  func cancellingEnds() async throws {
    let server = try startedServer(["/file": .stalls(payload(64_000), after: 16_000)])
    defer { server.stop() }
    let started = Locked(false)

    let task = Task {
      for try await event in download(from: server.url("/file")) {
        if case .progress = event { started.withLock { $0 = true } }
      }
    }
    #expect(
      await eventually { started.value }, "the stalled download should report some progress")
    task.cancel()
    _ = try? await withDeadline(
      .seconds(2), "a download whose task was cancelled",
      hint: "cancelling must end the stream: cancel the download task from onTermination, "
        + "and finish the stream from didCompleteWithError"
    ) {
      try await task.value
    }
    let closed = await eventually { server.abandoned.contains("/file") }
    #expect(
      closed,
      Comment(
        rawValue: "the download kept running after its task was cancelled: cancel the "
          + "download task from the stream's onTermination"))
  }

  @Test("Nothing is left open: the session lets its connection go when the download ends")
  func nothingLeaks() async throws {
    let server = try startedServer(["/file": .ok(bytes: payload(8_000))])
    defer { server.stop() }

    let events = try await collect(download(from: server.url("/file")), "download(from:)")
    if case .finished(let file)? = events.last { try? FileManager.default.removeItem(at: file) }

    #expect(server.acceptedConnections == 1, "one download, one connection")
    let released = await eventually { server.openConnections == 0 }
    #expect(
      released,
      Comment(
        rawValue: "the download is over but its connection is still open: the session keeps "
          + "its delegate, and its connections, until you invalidate it "
          + "(session.finishTasksAndInvalidate() once the task completes)"))
  }
}
