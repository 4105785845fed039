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

/// `count` bytes that no other test sends: a random head, then ``payload(_:)``, so the
/// session's temporary file for this download can be told apart from any other.
private func uniquePayload(_ count: Int) -> [UInt8] {
  let head = (0..<32).map { _ in UInt8.random(in: 0...255) }
  return Array((head + payload(count)).prefix(count))
}

/// The file in which FoundationNetworking is writing the download whose body starts with
/// `body`'s first 32 bytes (`<temporary directory>/<UUID>.tmp`), or nil if there is none.
private func sessionTemporaryFile(of body: [UInt8], since start: Date) -> URL? {
  let head = Array(body.prefix(32))
  let directory = URL(fileURLWithPath: NSTemporaryDirectory())
  // Only files written since the test began: a temporary folder can hold thousands of old
  // downloads, and opening each would take seconds.
  let files =
    (try? FileManager.default.contentsOfDirectory(
      at: directory, includingPropertiesForKeys: [.contentModificationDateKey])) ?? []
  for file in files where file.pathExtension == "tmp" {
    let modified = try? file.resourceValues(forKeys: [.contentModificationDateKey])
      .contentModificationDate
    guard let modified, modified >= start.addingTimeInterval(-1) else { continue }
    guard let handle = try? FileHandle(forReadingFrom: file) else { continue }
    defer { try? handle.close() }
    if let prefix = try? handle.read(upToCount: head.count), Array(prefix) == head { return file }
  }
  return nil
}

/// Runs `work` on a thread of its own and waits for it without holding a thread of
/// Swift's concurrency pool: a scan of the file system in a test must not look, to the
/// pool check, like the code under test blocking its thread.
private func onAThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    Thread { continuation.resume(returning: work()) }.start()
  }
}

/// Stops every task from running (each thread of Swift's concurrency pool is held) until
/// `done()` holds and dispatch's global queues, where URLSession calls its delegates, have a
/// thread to run on, and for `margin` after that; at most for `limit`. Call it inside
/// `withoutPoolCheck`.
///
/// On Linux the global queues and the pool share their threads, and libdispatch gives the
/// global queues a thread of their own only once the shared ones have been blocked for about
/// a second; from then on, delegate callbacks run while no task can. A callback's work that
/// was handed to a task then happens after every later callback, as it may on a loaded
/// device, instead of in between, as it almost always does on an idle one.
private func freezeTasks(
  until done: @escaping @Sendable () -> Bool, margin: Duration = .milliseconds(200),
  atMost limit: Duration = .seconds(3)
) async {
  let width = ProcessInfo.processInfo.activeProcessorCount
  let release = DispatchSemaphore(value: 0)
  let holding = Locked(0)
  for _ in 0..<width {
    Task.detached {
      holding.withLock { $0 += 1 }
      waitFor(release)
    }
  }
  await withCheckedContinuation { (frozen: CheckedContinuation<Void, Never>) in
    let watcher = Thread {
      let clock = ContinuousClock()
      let end = clock.now + limit
      while clock.now < end, holding.value < width { usleep(1_000) }
      let globalQueueRan = Locked(false)
      DispatchQueue.global().async { globalQueueRan.withLock { $0 = true } }
      while clock.now < end, !(globalQueueRan.value && done()) { usleep(1_000) }
      usleep(UInt32(margin / .microseconds(1)))
      for _ in 0..<width { release.signal() }
      frozen.resume()
    }
    watcher.name = "freezeTasks"
    watcher.start()
  }
}

/// Blocks the calling thread until `semaphore` is signalled.
private func waitFor(_ semaphore: DispatchSemaphore) { semaphore.wait() }

/// The progress values (`received`) among `events`.
private func received(_ events: [DownloadEvent]) -> [Int64] {
  events.compactMap { event in
    if case .progress(let received, _) = event { return received }
    return nil
  }
}

/// What a download that ended without its file is told.
private func noFile(_ download: String, _ events: [DownloadEvent]? = nil) -> Comment {
  let last = events.map { " (last event: \(String(describing: $0.last)))" } ?? ""
  return Comment(
    rawValue: "\(download) ended without .finished(file)\(last): the file must be in the "
      + "stream, after the progress, before the session's last callback "
      + "(didCompleteWithError) ends it; work handed on to run later comes after that end, "
      + "and is lost")
}

/// The contract of `download(from:configuration:)`, path by path, and the test that pins
/// each cell ("—": does not apply, and why).
///
/// | path | events, end | released | order, count | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | 2xx (200…299) | progress, then `.finished(file)` with the body, then the end: `progressThenFile`, `everySuccessStatus` | connection closed when it ends: `nothingLeaks`; session invalidated: `sessionInvalidatedOnEveryPath` | progress rising to the total (`received` is the running total); `.finished` once, last: `progressThenFile`, `slowListenerGetsEverything` | a listener that reads late (no task can run meanwhile) still gets all, in order: `slowListenerGetsEverything` |
/// | size unknown | `expected` is -1: `unknownSize` | — (as a 2xx) | — (as a 2xx) | — (as a 2xx) |
/// | the file | outlives the delegate method (the test deletes the session's temporary file as Apple's session does) and is not the session's temporary file: `fileOutlivesTheDelegate` | the caller owns it: `sameURLTwice` (a later download leaves it whole) | a second download of the same URL, after or at once, gets a file of its own: `sameURLTwice` | in the stream before the session's last callback ends it: `slowListenerGetsEverything` |
/// | 3xx, 4xx, 5xx | no `.finished`, not even before the error: `noFileBeforeTheFailure`; throws `DownloadFailed(status)`: `badStatusThrows` | connection closed: `nothingLeaks`; session invalidated: `sessionInvalidatedOnEveryPath` | — (no events but progress) | — |
/// | dropped mid-body | throws the session's `URLError`: `droppedConnectionThrows` | session invalidated: `sessionInvalidatedOnEveryPath` (the server closed the connection) | — | — |
/// | listener breaks | the download is cancelled: `stoppingCancels` | connection closed: `stoppingCancels`, `nothingLeaks`; session invalidated: `sessionInvalidatedOnEveryPath` | — (nobody reads any more) | — |
/// | listener's task cancelled | the stream ends, the download is cancelled: `cancellingEnds` | connection closed: `cancellingEnds`; session invalidated: `sessionInvalidatedOnEveryPath` | — (nobody reads any more) | — |
/// | two downloads at once | each its own events and file: `sameURLTwice` | — (as one download) | — (each stream has its own) | — |
/// | second listener | — (one stream per call; a stream has one listener) | — | — | — |
/// | a configuration passed in | its headers reach the server: `usesTheGivenConfiguration` | — | — | — |
/// | the session given a concurrent `OperationQueue()` of its own as the delegate queue | — not caught: swift-corelibs-foundation delivers a download's callbacks one after another even then, so progress and the end keep their order in every run seen; on Apple platforms such a queue may run them at once |
// One test at a time: `slowListenerGetsEverything` stops every task in the process for about
// a second, which would make the other tests' downloads fail for that reason instead of
// their own.
@Suite("9.2 Download with progress", .serialized)
struct DownloadTests {
  @Test("Downloads with the configuration it is given: its headers reach the server")
  func usesTheGivenConfiguration() async throws {
    let server = try startedServer(["/file": .ok("report")])
    defer { server.stop() }
    let configuration = URLSessionConfiguration.ephemeral
    configuration.urlCache = nil
    configuration.httpAdditionalHeaders = ["X-Workbook-Caller": "9.2"]

    _ = try await collect(
      download(from: server.url("/file"), configuration: configuration),
      "download(from:configuration:)")

    let heads = server.requestHeads
    #expect(
      heads.count == 1 && heads[0].lowercased().contains("x-workbook-caller: 9.2"),
      """
      the caller's configuration sets a header, X-Workbook-Caller, and the request reached \
      the server without it: the session was made with a configuration of its own, not the \
      one passed in, so whatever the caller set there (headers, timeouts, caching, cookies) \
      is lost
      """)
  }

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
      progress.last == Int64(body.count),
      Comment(
        rawValue: "the last progress should count every byte of \(body.count): got \(progress); "
          + "`received` is the running total of the bytes so far, not the size of the last "
          + "piece"))
    guard case .finished(let file)? = events.last else {
      Issue.record(noFile("the download", events))
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

  @Test("Every status from 200 to 299 is a success: the file holds the body")
  func everySuccessStatus() async throws {
    let server = try startedServer(statusRoutes(successStatuses))
    defer { server.stop() }

    for code in successStatuses {
      let outcome = await Result {
        try await collect(
          download(from: server.url("/status/\(code)")), "download(from:) of a \(code)")
      }
      guard case .success(let events) = outcome else {
        Issue.record(
          Comment(
            rawValue: "the server answered \(code), and the download failed with "
              + "\(outcome): every status from 200 to 299 is a success (201 Created, 204 No "
              + "Content, 206 Partial Content…), not only 200"))
        continue
      }
      guard case .finished(let file)? = events.last else {
        Issue.record(noFile("the download of a \(code)", events))
        continue
      }
      defer { try? FileManager.default.removeItem(at: file) }
      #expect(
        (try? Data(contentsOf: file)) == Data(statusBody(code).utf8),
        "the file of a \(code) should hold its body")
    }
  }

  @Test("A status outside 200…299 ends the stream with DownloadFailed, never with a file")
  func badStatusThrows() async throws {
    let server = try startedServer(statusRoutes(failureStatuses))
    defer { server.stop() }

    for code in failureStatuses {
      let outcome = await Result {
        try await collect(
          download(from: server.url("/status/\(code)")), "download(from:) of a \(code)")
      }
      if case .success(let events) = outcome {
        for case .finished(let file) in events { try? FileManager.default.removeItem(at: file) }
      }
      guard case .failure(let error) = outcome else {
        Issue.record(
          Comment(
            rawValue: "the server answered \(code): a \(code) is not a success, throw "
              + "DownloadFailed(status: \(code)) (URLSession downloads the error page like any "
              + "file: check downloadTask.response's statusCode); the stream ended normally"))
        continue
      }
      if error is DeadlineExceeded { continue }
      #expect(
        error as? DownloadFailed == DownloadFailed(status: code),
        Comment(
          rawValue: "the server answered \(code): a \(code) is not a success, throw "
            + "DownloadFailed(status: \(code)) (URLSession downloads the error page like any "
            + "file: check downloadTask.response's statusCode), not \(error)"))
    }
  }

  @Test("A failed download hands out no file before it throws")
  func noFileBeforeTheFailure() async throws {
    let server = try startedServer(["/file": .status(404, "the error page"), "/gone": .status(500)])
    defer { server.stop() }

    for path in ["/file", "/gone"] {
      let events = Locked<[DownloadEvent]>([])
      _ = await Result {
        try await withDeadline(
          .seconds(2), "download(from:) of \(path)",
          hint: "the stream never ends: finish it from urlSession(_:task:didCompleteWithError:), "
            + "on success and on error"
        ) {
          for try await event in download(from: server.url(path)) {
            if case .finished(let file) = event { try? FileManager.default.removeItem(at: file) }
            events.withLock { $0.append(event) }
          }
        }
      }
      let files = events.value.filter { if case .finished = $0 { true } else { false } }
      #expect(
        files.isEmpty,
        Comment(
          rawValue: "the server answered with an error page, and the stream yielded "
            + "\(files) before it failed: a listener takes .finished as a finished download "
            + "and opens the file, the error page here; nothing is finished until the status "
            + "says so"))
    }
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

  @Test("Nothing is left open, however the download ends")
  func nothingLeaks() async throws {
    let server = try startedServer([
      "/file": .ok(bytes: payload(8_000)), "/missing": .status(404, "not here"),
      "/broken": .status(500, "internal error"),
      "/dropped": .dropped(payload(64_000), after: 20_000),
      "/stalls": .stalls(payload(64_000), after: 16_000),
    ])
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

    for path in ["/missing", "/broken", "/dropped"] {
      _ = await Result {
        try await collect(download(from: server.url(path)), "download(from:) of \(path)")
      }
      #expect(
        await eventually { server.openConnections == 0 },
        Comment(
          rawValue: "a download of \(path) failed, and its connection to the server is still "
            + "open: a failed download must let its session go as surely as a finished one, "
            + "or every failure leaks a connection"))
    }

    try await withDeadline(
      .seconds(2), "the first progress of a stalled download",
      hint: "yield .progress from urlSession(_:downloadTask:didWriteData:…)"
    ) {
      for try await event in download(from: server.url("/stalls")) {
        if case .progress = event { break }
      }
    }
    #expect(
      await eventually { server.openConnections == 0 },
      Comment(
        rawValue: "the listener stopped listening, and the download's connection is still "
          + "open: a download nobody listens to must end and let its session go"))
  }

  @Test("The session is invalidated however the download ends: finished, failed or abandoned")
  func sessionInvalidatedOnEveryPath() async throws {
    let server = try startedServer([
      "/file": .ok(bytes: payload(8_000)), "/missing": .status(404, "not here"),
      "/broken": .status(500, "internal error"),
      "/dropped": .dropped(payload(64_000), after: 20_000),
      "/left": .stalls(payload(64_000), after: 16_000),
      "/cancelled": .stalls(payload(64_000), after: 16_000),
    ])
    defer { server.stop() }

    for (path, ending) in [
      ("/file", "finished"), ("/missing", "failed with a 404"),
      ("/broken", "failed with a 500"), ("/dropped", "failed when the connection dropped"),
      ("/left", "was left by its listener"), ("/cancelled", "had its listener's task cancelled"),
    ] {
      let url = server.url(path)
      // Each download's session is kept alive, as Apple's URLSession keeps one until it is
      // invalidated (see SessionWitness): an invalidated session has let go of its delegate.
      // No stream kept here: a listener that breaks out of its loop leaves only when nothing
      // holds the stream any more.
      let events = { @Sendable in
        download(from: url, configuration: SessionWitness.configuration())
      }
      switch path {
      case "/left":
        _ = await Result {
          try await withDeadline(
            .seconds(2), "the first progress of a stalled download",
            hint: "yield .progress from urlSession(_:downloadTask:didWriteData:…)"
          ) {
            for try await event in events() {
              if case .progress = event { break }
            }
          }
        }
      case "/cancelled":
        let started = Locked(false)
        let listener = Task {
          for try await event in events() {
            if case .progress = event { started.withLock { $0 = true } }
          }
        }
        _ = await eventually { started.value }
        listener.cancel()
        _ = try? await withDeadline(
          .seconds(2), "a download whose task was cancelled",
          hint: "cancelling must end the stream: cancel the download task from onTermination, "
            + "and finish the stream from didCompleteWithError"
        ) {
          try await listener.value
        }
      default:
        let outcome = await Result { try await collect(events(), "download(from:) of \(path)") }
        if case .success(let events) = outcome {
          for case .finished(let file) in events { try? FileManager.default.removeItem(at: file) }
        }
      }
      guard SessionWitness.canWitness else {
        #if canImport(FoundationNetworking)
        // On Linux the witness is what makes this check possible: losing it must be loud.
        Issue.record(
          Comment(
            rawValue: "workbook error: this toolchain's URLSessionTask no longer shows its "
              + "session to SessionWitness, so whether each session is invalidated cannot "
              + "be checked"))
        #endif
        return
      }
      guard let session = SessionWitness.sessions(of: url).last else {
        // A download that never reached the session's loading: other tests say why.
        continue
      }
      guard await eventually({ session.delegate == nil }) else {
        Issue.record(
          Comment(
            rawValue: "the download of \(path) \(ending), and its session was never "
              + "invalidated: a URLSession keeps its delegate (and, through it, the stream) "
              + "and its connections until finishTasksAndInvalidate() or "
              + "invalidateAndCancel() is called, so on Apple platforms every download that "
              + "ends this way leaks its session for as long as the app runs (this test keeps "
              + "the session alive as they do; FoundationNetworking on Linux happens to free "
              + "it); the session must be let go however the download ends, not only when it "
              + "succeeds"))
        return
      }
    }
  }

  @Test("The file outlives the delegate method: it is not the session's temporary file")
  func fileOutlivesTheDelegate() async throws {
    let body = uniquePayload(64_000)
    let server = try startedServer(["/file": .slowBody(body, pieces: 4, every: .milliseconds(30))])
    defer { server.stop() }

    // Apple's URLSession deletes the file it hands to didFinishDownloadingTo as soon as that
    // method returns; FoundationNetworking on Linux leaves it there. So this test finds the
    // session's temporary file while the bytes arrive, and deletes it itself, as Apple's
    // session would, once the stream hands out .finished (the delegate method is then over
    // or about to be).
    let started = Date()
    // Longer than the other downloads' limits: the search for the session's file, on a thread
    // of its own, is slow on a busy machine (one run in five under ten busy loops ran out
    // of 3 seconds).
    let (location, handedOut) = try await withDeadline(
      .seconds(5), "download(from:)",
      hint: "the stream never ends: finish it from urlSession(_:task:didCompleteWithError:), "
        + "on success and on error"
    ) { () async throws -> (URL?, URL?) in
      var location: URL?
      var handedOut: URL?
      for try await event in download(from: server.url("/file")) {
        switch event {
        case .progress:
          if location == nil {
            location = await onAThreadOfItsOwn { sessionTemporaryFile(of: body, since: started) }
          }
        case .finished(let file):
          handedOut = file
          if let location, location.standardizedFileURL.path != file.standardizedFileURL.path {
            try? FileManager.default.removeItem(at: location)
          }
        }
      }
      return (location, handedOut)
    }
    guard let file = handedOut else {
      Issue.record(noFile("the download"))
      return
    }
    defer { try? FileManager.default.removeItem(at: file) }
    if let location {
      #expect(
        location.standardizedFileURL.path != file.standardizedFileURL.path,
        Comment(
          rawValue: ".finished handed out \(file.path), the session's own temporary file: "
            + "URLSession deletes that file as soon as didFinishDownloadingTo returns (on "
            + "Apple platforms; FoundationNetworking happens to leave it), so the caller gets a "
            + "URL to nothing; the file must be in a place of its own before the method "
            + "returns"))
    }
    #expect(
      (try? Data(contentsOf: file)) == Data(body),
      Comment(
        rawValue: "the file at .finished's URL should hold the whole download once the "
          + "session's temporary file is gone: the session deletes the file at `location` "
          + "when didFinishDownloadingTo returns, so it must be moved (or copied) before"))
  }

  @Test("Two downloads of the same URL, one after the other or at once, get a file each")
  func sameURLTwice() async throws {
    let first = uniquePayload(20_000)
    let second = uniquePayload(30_000)
    let server = try startedServer()
    defer { server.stop() }
    server.route("/report.pdf", [.ok(bytes: first), .ok(bytes: second)])

    var files: [URL] = []
    defer { for file in files { try? FileManager.default.removeItem(at: file) } }
    for (round, body) in [first, second].enumerated() {
      let outcome = await Result {
        try await collect(
          download(from: server.url("/report.pdf")), "download \(round + 1) of /report.pdf")
      }
      guard case .success(let events) = outcome, case .finished(let file)? = events.last else {
        if case .success(let events) = outcome {
          Issue.record(noFile("download \(round + 1) of /report.pdf", events))
        } else {
          Issue.record(
            Comment(
              rawValue: "download \(round + 1) of /report.pdf ended with \(outcome) instead of "
                + ".finished(file): a URL downloaded before must download again, into a file "
                + "of its own (a name taken from the URL is already taken the second time)"))
        }
        continue
      }
      files.append(file)
      #expect((try? Data(contentsOf: file)) == Data(body), "each file holds its own download")
    }
    if files.count == 2 {
      #expect(files[0] != files[1], "two downloads must not share one file")
      #expect(
        (try? Data(contentsOf: files[0])) == Data(first),
        Comment(
          rawValue: "the second download of /report.pdf replaced the first one's file: a "
            + "caller owns the file it was handed, and a later download must not touch it"))
    }

    // Two at once.
    server.route("/report.pdf", .slowBody(first, pieces: 2, every: .milliseconds(50)))
    let results = try await withDeadline(
      .seconds(3), "two downloads of /report.pdf at once",
      hint: "the stream never ends: finish it from urlSession(_:task:didCompleteWithError:)"
    ) {
      async let one = Result { try await collect(download(from: server.url("/report.pdf")), "one") }
      async let two = Result { try await collect(download(from: server.url("/report.pdf")), "two") }
      return await [one, two]
    }
    var together: [URL] = []
    for result in results {
      if case .success(let events) = result, case .finished(let file)? = events.last {
        together.append(file)
        files.append(file)
      } else if case .success(let events) = result {
        Issue.record(noFile("one of two downloads of /report.pdf at once", events))
      } else {
        Issue.record(
          Comment(
            rawValue: "two downloads of /report.pdf ran at once and one ended with \(result): "
              + "each download needs a file of its own"))
      }
    }
    if together.count == 2 {
      #expect(together[0] != together[1], "two downloads at once must not share one file")
    }
  }

  @Test("A size the server did not announce is reported as -1")
  func unknownSize() async throws {
    let body = payload(48_000)
    let server = try startedServer([
      "/file": .unsized(body, pieces: 4, every: .milliseconds(20))
    ])
    defer { server.stop() }

    let events = try await collect(download(from: server.url("/file")), "download(from:)")
    if case .finished(let file)? = events.last { try? FileManager.default.removeItem(at: file) }
    let expected = events.compactMap { event -> Int64? in
      if case .progress(_, let expected) = event { return expected }
      return nil
    }
    #expect(
      !expected.isEmpty,
      Comment(
        rawValue: "the server sent no Content-Length and the stream had no .progress at all: "
          + "a download whose size nobody knows still reports every piece written, with -1 "
          + "as the expected size, so the screen can show bytes received"))
    #expect(
      expected.allSatisfy { $0 == -1 },
      Comment(
        rawValue: "the server sent no Content-Length, and progress said expected \(Set(expected)) "
          + "instead of -1: DownloadEvent documents -1 for a size nobody knows, and a progress "
          + "bar told 0 would divide by zero or show a finished bar"))
    #expect(received(events).last == Int64(body.count), "the last progress should count every byte")
  }

  @Test("A listener that reads late, while no task can run, still gets every event in order")
  func slowListenerGetsEverything() async throws {
    // Many small pieces: more progress callbacks than a small buffer holds.
    let body = uniquePayload(40_000)
    let server = try startedServer([
      "/file": .slowBody(body, pieces: 40, every: .milliseconds(3))
    ])
    defer { server.stop() }

    let events = try await withoutPoolCheck {
      let stream = download(from: server.url("/file"))
      // The listener is busy and no task runs (the test holds the concurrency pool) while
      // the whole body arrives and the session's delegate callbacks run: what they hand to
      // the stream must wait there for the listener, in order and complete.
      await freezeTasks(until: { server.answered.count == 1 })
      return try await withDeadline(
        .seconds(3), "download(from:) read by a late listener",
        hint: "the stream never ends: finish it from urlSession(_:task:didCompleteWithError:)"
      ) {
        var seen: [DownloadEvent] = []
        for try await event in stream { seen.append(event) }
        return seen
      }
    }

    let files = events.compactMap { event -> URL? in
      if case .finished(let file) = event { return file }
      return nil
    }
    defer { for file in files { try? FileManager.default.removeItem(at: file) } }
    let progress = received(events)
    let inOrder = progress == progress.sorted()
    #expect(
      inOrder && progress.last == Int64(body.count),
      Comment(
        rawValue: "the listener read late, while no task could run, and got the progress "
          + "\(progress) for \(body.count) bytes: progress went missing or came out of order; "
          + "every callback's progress must reach the stream in that callback, in the order "
          + "the bytes arrived, and wait there however late the listener asks"
          + (inOrder && !progress.isEmpty && files.isEmpty
            ? "; it stopped short of the end and the .finished event was lost too: a stream "
              + "made with a bounded buffer (.bufferingOldest or .bufferingNewest) throws "
              + "events away while the listener is late (keep the default, .unbounded)"
            : "")))
    #expect(
      files.count == 1 && { if case .finished? = events.last { true } else { false } }(),
      Comment(
        rawValue: "the listener read late, while no task could run, and the stream ended "
          + "with \(files.count) .finished event(s) (last event: "
          + "\(String(describing: events.last))): the file must be in the stream, after all the "
          + "progress and once, before the session's last callback ends it, even when nobody "
          + "is reading yet and no task can run"
          + (files.isEmpty && progress.last == Int64(body.count)
            ? "; all the progress came and then the .finished event was lost: a stream made with "
              + "a bounded buffer (.bufferingOldest or .bufferingNewest) throws events away "
              + "while the listener is late (keep the default, .unbounded), and a .finished "
              + "yielded from a task of its own comes after the stream has ended"
            : "")))
    if let file = files.first {
      #expect((try? Data(contentsOf: file)) == Data(body), "the file should hold the download")
    }
  }
}
