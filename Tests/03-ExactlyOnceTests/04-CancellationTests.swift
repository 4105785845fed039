import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import ExactlyOnce

/// The contract of the cancellable download: each path, what the caller and the downloader
/// see, and the test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | downloads (running, cancelled) | thread, timing |
/// | --- | --- | --- | --- |
/// | nobody cancels (inside the call, soon, later) | the file: `returnsTheFile` | none cancelled (a cancel sent after the file stops nothing, and is allowed): `returnsTheFile` | — |
/// | another error | the downloader's error, unchanged: `otherErrorsPassThrough` | — | — |
/// | cancelled while downloading | `CancellationError`: `cancellingCancelsTheDownload` | the download cancelled: `cancellingCancelsTheDownload` | the cancel's reply inside the call, soon, later: `cancellingCancelsTheDownload` |
/// | cancelled before the call | `CancellationError`: `alreadyCancelled` | none left running: `alreadyCancelled` | — |
/// | cancelled while the download starts | `CancellationError`: `cancelWhileStarting` | cancelled, though not yet stored: `cancelWhileStarting` | — |
/// | cancelled while the reply resumes | the file or `CancellationError`: `cancelWhileTheReplyResumes` | — | no deadlock with `onCancel`: `cancelWhileTheReplyResumes` |
/// | cancelled at any moment, 300 times | `CancellationError`: `cancellingAtAnyMoment` | none left running: `cancellingAtAnyMoment` | — |
/// | cancelled as the file arrives, 200 times | one resume: `cancellingAsTheFileArrives` | — | — |
/// | the file delivered after a cancel | one resume: `deliveryAfterCancel` | — | — |
/// | a plain `var` flag of its own instead of `ResumeOnce`, read and set by the cancelled reply and a late delivery on two threads | — not caught every run: the two replies come one after the other (`deliveryAfterCancel`), so the flag holds; only when they overlap in the same instant do both get through, a data race that `make tsan` names and a plain run almost never meets | | | |
/// | cancelled after the file arrived | the file: `cancellingAfterCompletion` | — | — |
/// | cancelled while the finished download hands over its file | the file or `CancellationError`, never a wait for a reply that cannot come: `cancelWhileTheFileIsHandedOver` | — | — |
/// | the caller answered by a cancel | `CancellationError` | already cancelled when the caller is resumed: `cancelledBeforeItThrows` (judged when the caller had suspended; a cancel that lands while the call is still starting resumes nothing to watch) | — |
/// | cancelled before the call or while starting, the cancelled reply inside `cancel()` | `CancellationError`: `earlyCancelAnsweredInsideCancel` | cancelled: `earlyCancelAnsweredInsideCancel` | no lock re-entered by the reply: `earlyCancelAnsweredInsideCancel` |
/// | the next download after a cancelled one | its file: `reuseAfterCancel` | — | — |
/// | a file that comes before the cancelled reply (`deliversAfterCancel`), guarded by "drop a file once the cancelled reply was seen" | — not a mistake for this downloader: the starter and `FileDownloader` say the extra callback comes after the cancelled reply, and in that order the guard holds; at the same instant it is the flag row above (not caught every run) | | |
/// | `attach` looks for a cancel in one locked step and stores the download in another | — a cancel between the two is overwritten and lost, but the gap lies between two lock steps of the answer's own that call nothing the test can pause; `cancellingAtAnyMoment` lands there only by chance (not caught) | | |
/// | cancelled between a look at a flag of the answer's own and the store of the download | — the gap is inside the answer's own code, between two of its steps that call nothing the test can pause (an atomic load, then a store under another lock); `cancellingAtAnyMoment` lands there only by chance (not caught) | | |
@Suite("3.4 Cancellation")
struct CancellationTests {
  static let report = URL(string: "https://files.example/q3-report.pdf")!
  static let missing = URL(string: "https://files.example/missing.pdf")!
  static let reportData = Data(repeating: 0x25, count: 12_000)

  static func makeDownloader(
    delivery: CallbackScript = .later(.milliseconds(300)), cancelReply: CallbackScript = .default,
    deliversAfterCancel: Bool = false, whileStarting: (@Sendable () -> Void)? = nil,
    whileHandingOver: (@Sendable () -> Void)? = nil
  ) -> FileDownloader {
    FileDownloader(
      files: [report: reportData], delivery: delivery, cancelReply: cancelReply,
      deliversAfterCancel: deliversAfterCancel, whileStarting: whileStarting,
      whileHandingOver: whileHandingOver)
  }

  static let hint =
    "a path never resumes the continuation: the downloader's reply (data, error or "
    + ".cancelled) must resume it, and a cancel must reach the DownloadTask"

  /// What a lost cancel looks like to a test whose downloader only stops when cancelled.
  static let lostCancel =
    "the cancel never reached the DownloadTask (this downloader only stops when cancelled); "
    + "onCancel must cancel it, and a cancel that comes before the DownloadTask is stored "
    + "must not be lost; nor may the DownloadTask be gone by then (held weakly, it is freed "
    + "once download(…) returns, and the cancel finds nothing)"

  static let throwsCancellationError =
    "a cancelled download must throw CancellationError (the downloader's .cancelled reply "
    + "becomes CancellationError())"

  @Test(
    "Returns the file when nobody cancels",
    arguments: [CallbackScript.synchronously, .default, .later(.milliseconds(100))])
  func returnsTheFile(delivery: CallbackScript) async throws {
    let downloader = Self.makeDownloader(delivery: delivery)

    let hint =
      delivery.timing == .synchronously
      ? Self.hint + "; here the downloader replied at once, inside its download(…) call, before it "
        + "returned: a reply that comes before the continuation is stored must not be lost"
      : Self.hint
    let data = try await withDeadline(.seconds(2), "download(_:with:)", hint: hint) {
      try await download(Self.report, with: downloader)
    }

    #expect(data == Self.reportData)
    #expect(downloader.downloadsStarted == 1)
    // A cancel sent once the file is in stops nothing (the downloader ignores it), so only a
    // download stopped for nobody counts.
    #expect(
      downloader.downloadsCancelled == 0,
      "download(_:with:) cancelled its download although nobody cancelled the task")
  }

  @Test("Passes the downloader's other errors through unchanged")
  func otherErrorsPassThrough() async throws {
    let downloader = Self.makeDownloader(delivery: .default)

    await #expect(throws: DownloadError.notFound) {
      try await withDeadline(.seconds(2), "download(_:with:)", hint: Self.hint) {
        try await download(Self.missing, with: downloader)
      }
    }
  }

  @Test(
    "Cancelling the task cancels the running download and throws CancellationError",
    arguments: [CallbackScript.synchronously, .default, .later(.milliseconds(100))])
  func cancellingCancelsTheDownload(cancelReply: CallbackScript) async throws {
    // The file comes only after the cancel: a download the cancel stopped never delivers it,
    // one it missed does.
    let deliveries = HeldDeliveries()
    let downloader = Self.makeDownloader(delivery: deliveries.script, cancelReply: cancelReply)
    let task = Task { try await download(Self.report, with: downloader) }
    await eventually("the download to start") { downloader.downloadsStarted == 1 }

    task.cancel()
    deliveries.release()

    let outcome = await Result {
      try await withDeadline(.seconds(2), "download(_:with:)", hint: Self.hint) {
        try await task.value
      }
    }
    // A cancel that reached the download only after the file had come was put off.
    let cancelCameLate = downloader.cancelRequests > 0 && downloader.downloadsCancelled == 0
    var threwTheReply = false
    if case .failure(let error) = outcome { threwTheReply = error as? DownloadError == .cancelled }
    #expect(
      throws: CancellationError.self,
      Comment(
        rawValue: threwTheReply
          ? "the download was cancelled, and download(_:with:) threw the downloader's own "
            + "DownloadError.cancelled: to Swift callers a cancelled call must throw "
            + "CancellationError, so the .cancelled reply must become one, whatever thread it "
            + "comes on and whatever that thread's task says about cancellation"
          : cancelCameLate
            ? "cancelling the task must cancel the download and throw CancellationError; the "
              + "cancel did reach the download, but only after the file had come: it was put off "
              + "(to a task of its own, a queue) instead of made inside onCancel, at once"
            : "cancelling the task must cancel the download (onCancel) and throw "
              + "CancellationError")
    ) {
      try outcome.get()
    }
    #expect(
      downloader.downloadsCancelled == 1,
      Comment(
        rawValue: cancelCameLate
          ? "the download was not stopped: its cancel came after the file had"
          : "the cancel never reached the DownloadTask: onCancel must cancel the download"))
    #expect(downloader.downloadsRunning == 0)
  }

  @Test("A task cancelled before the call leaves no download running and throws CancellationError")
  func alreadyCancelled() async throws {
    let downloader = Self.makeDownloader()

    await #expect(
      throws: CancellationError.self,
      """
      the task was cancelled before the call, so onCancel ran before the download \
      started: the cancel never reached the DownloadTask; a cancel that comes before the \
      DownloadTask is stored must not be lost, and the call must throw CancellationError
      """
    ) {
      try await withDeadline(.seconds(2), "download(_:with:)", hint: Self.hint) {
        // Cancel this very task first: onCancel runs at once, before the download exists.
        withUnsafeCurrentTask { $0?.cancel() }
        return try await download(Self.report, with: downloader)
      }
    }
    #expect(
      downloader.downloadsRunning == 0,
      "the cancel never reached the DownloadTask: a download started after the cancel must be cancelled"
    )
    #expect(downloader.downloadsStarted == downloader.downloadsCancelled)
  }

  @Test(
    "Cancelling at any moment, 300 times over, always ends in CancellationError with no download left running"
  )
  func cancellingAtAnyMoment() async throws {
    // This downloader never delivers: only a cancel ends its downloads.
    let downloader = Self.makeDownloader(delivery: .never)

    for round in 0..<300 {
      let task = Task { try await download(Self.report, with: downloader) }
      for _ in 0..<(round % 7) { await Task.yield() }
      task.cancel()

      // A lost cancel stops the loop at the deadline instead of costing 2 s per round.
      let outcome = try await withDeadline(
        .seconds(2), "download(_:with:)", hint: Self.lostCancel
      ) {
        await task.result
      }
      guard case .failure(let error) = outcome, error is CancellationError else {
        Issue.record("round \(round): \(Self.throwsCancellationError); got \(outcome)")
        break
      }
    }
    #expect(downloader.downloadsRunning == 0)
  }

  @Test(
    "A cancel that lands while the download is starting, before its DownloadTask is stored, still cancels it"
  )
  func cancelWhileStarting() async throws {
    // The downloader cancels the calling task from inside download(_:completion:): onCancel
    // runs after the download has started and before the bridge can store its task. A
    // bridge that checks Task.isCancelled first, or whose onCancel only cancels a task it
    // can already see, loses this cancel every time.
    let downloader = Self.makeDownloader(delivery: .never) {
      withUnsafeCurrentTask { $0?.cancel() }
    }

    await #expect(throws: CancellationError.self, "\(Self.throwsCancellationError)") {
      try await withDeadline(.seconds(2), "download(_:with:)", hint: Self.lostCancel) {
        try await download(Self.report, with: downloader)
      }
    }
    #expect(downloader.downloadsStarted == 1)
    #expect(
      downloader.downloadsRunning == 0,
      "the cancel never reached the DownloadTask: the download is still running")
  }

  @Test(
    "A cancel from another thread while the downloader's reply is resuming the task gets through"
  )
  func cancelWhileTheReplyResumes() async throws {
    // withCancellationRacingResume cancels the task from a third thread at the moment the
    // downloader's reply, on its own thread, is inside resume. If that resume runs while
    // holding a lock that onCancel takes, onCancel waits for the lock while the runtime's
    // cancel holds the task's status lock: a deadlock in a real program, a failure naming
    // it here.
    for delay in [20, 50, 100, 200, 400] {
      let downloader = Self.makeDownloader(delivery: .later(.milliseconds(delay)))
      let (outcome, raced) = try await withCancellationRacingResume(
        .seconds(3), "download(_:with:)", hint: Self.hint
      ) {
        let outcome: Result<Data, any Error>
        do {
          outcome = .success(try await download(Self.report, with: downloader))
        } catch {
          outcome = .failure(error)
        }
        return (outcome, Task.isCancelled)
      }
      switch outcome {
      case .success(let data):
        #expect(data == Self.reportData)
      case .failure(let error):
        #expect(error is CancellationError, "\(Self.throwsCancellationError); got \(error)")
      }
      // Cancelled means the probe ran inside the reply's resume; otherwise the reply came
      // before the task had suspended, so try again with a later one.
      if raced { return }
    }
    Issue.record("the test could not cancel the task while the downloader's reply resumed it")
  }

  @Test("Cancelling after the file arrived is harmless")
  func cancellingAfterCompletion() async throws {
    let downloader = Self.makeDownloader(delivery: .default)
    let task = Task { try await download(Self.report, with: downloader) }

    let data = try await withDeadline(.seconds(2), "download(_:with:)", hint: Self.hint) {
      try await task.value
    }
    task.cancel()

    #expect(data == Self.reportData)
    #expect(downloader.downloadsCancelled == 0)
  }

  @Test("A cancel while the finished download hands over its file still ends the call")
  func cancelWhileTheFileIsHandedOver() async throws {
    // The downloader has finished, so the cancel stops nothing and no .cancelled reply will
    // come: the file's callback, right after it, is the only answer left. Every real
    // downloader has this gap between "done" and its callback.
    let deliveries = HeldDeliveries()
    let caller = Locked<Task<Data, any Error>?>(nil)
    let downloader = Self.makeDownloader(
      delivery: deliveries.script,
      whileHandingOver: { caller.withLock { $0 }?.cancel() })
    let task = Task { try await download(Self.report, with: downloader) }
    caller.withLock { $0 = task }
    await eventually("the download to start") { downloader.downloadsStarted == 1 }
    deliveries.release()

    let outcome = await Result {
      try await withDeadline(
        .seconds(2), "download(_:with:)",
        hint: "the task was cancelled while the downloader was handing over the file: the "
          + "download had already finished, so its cancel() stopped nothing and no .cancelled "
          + "reply will come; the file's callback was the only answer left, and it did not "
          + "resume the caller (a file dropped because the task was cancelled waits for a "
          + "reply that never comes)"
      ) {
        try await task.value
      }
    }
    switch outcome {
    case .success(let data): #expect(data == Self.reportData)
    case .failure(let error):
      #expect(error is CancellationError, "\(Self.throwsCancellationError); got \(error)")
    }
    #expect(
      downloader.cancelRequests == 1 && downloader.downloadsCancelled == 0,
      "the test could not cancel while the finished download handed over its file")
  }

  @Test("When download(_:with:) throws CancellationError, its download has been cancelled")
  func cancelledBeforeItThrows() async throws {
    // The probe runs on the thread that resumes the caller, inside that resume: what the
    // caller can see the moment it goes on, every run.
    let probe = ResumeProbeExecutor()
    let deliveries = HeldDeliveries()
    let downloader = Self.makeDownloader(delivery: deliveries.script)
    let task = Task(executorPreference: probe) {
      try await download(Self.report, with: downloader)
    }
    await eventually("the download to start") { downloader.downloadsStarted == 1 }
    let runningAtResume = Locked<Int?>(nil)
    probe.onNextResume { runningAtResume.withLock { $0 = downloader.downloadsRunning } }

    task.cancel()

    await #expect(throws: CancellationError.self, "\(Self.throwsCancellationError)") {
      try await withDeadline(.seconds(2), "download(_:with:)", hint: Self.hint) {
        try await task.value
      }
    }
    deliveries.release()
    // No figure when the caller was answered before it had even suspended (a cancel that
    // landed while the call was still starting): no resume went through the probe to judge.
    #expect(
      (runningAtResume.withLock { $0 } ?? 0) == 0,
      Comment(
        rawValue: "download(_:with:) answered its caller while the download was still running: "
          + "the caller was resumed before the cancel reached the DownloadTask, so it goes on "
          + "(and may download again) beside a download nobody stopped yet"))
  }

  @Test("Cancelling just as the file arrives, 200 times over, never resumes twice")
  func cancellingAsTheFileArrives() async throws {
    let downloader = Self.makeDownloader(delivery: .default)

    for round in 0..<200 {
      let task = Task { try await download(Self.report, with: downloader) }
      for _ in 0..<(round % 5) { await Task.yield() }
      // A resume made under the lock that onCancel takes can deadlock this race for good.
      guard cancelOrReportLockedResume(task, "download(_:with:)") else { return }

      let outcome = try await withDeadline(.seconds(2), "download(_:with:)", hint: Self.hint) {
        await task.result
      }
      switch outcome {
      case .success(let data): #expect(data == Self.reportData)
      case .failure(let error):
        #expect(error is CancellationError, "\(Self.throwsCancellationError); got \(error)")
      }
    }
    #expect(downloader.downloadsRunning == 0)
  }

  @Test("A downloader that still delivers the file after a cancel does not resume twice")
  func deliveryAfterCancel() async throws {
    // The file arrives after the cancelled reply has been handled, whatever the machine's
    // speed.
    let deliveries = HeldDeliveries()
    let downloader = Self.makeDownloader(delivery: deliveries.script, deliversAfterCancel: true)
    let task = Task { try await download(Self.report, with: downloader) }
    await eventually("the download to start") { downloader.downloadsStarted == 1 }

    task.cancel()

    await #expect(throws: CancellationError.self, "\(Self.throwsCancellationError)") {
      try await withDeadline(.seconds(2), "download(_:with:)", hint: Self.hint) {
        try await task.value
      }
    }
    deliveries.release()
    // Wait for the late delivery, so that a second resume crashes inside this test.
    await eventually("the file to arrive after the cancel") {
      downloader.deliveriesAfterCancel == 1
    }
  }

  @Test("After a cancelled download, the same downloader serves the next one")
  func reuseAfterCancel() async throws {
    // The files arrive once the first download is cancelled: the cancel always comes first.
    let deliveries = HeldDeliveries()
    let downloader = Self.makeDownloader(delivery: deliveries.script)
    let cancelled = Task { try await download(Self.report, with: downloader) }
    await eventually("the download to start") { downloader.downloadsStarted == 1 }
    cancelled.cancel()
    await #expect(throws: CancellationError.self, "\(Self.throwsCancellationError)") {
      try await withDeadline(.seconds(2), "download(_:with:)", hint: Self.hint) {
        try await cancelled.value
      }
    }

    // The cancelled download's file now finds nobody; the second download's comes at once.
    deliveries.release()

    let data = try await withDeadline(.seconds(2), "a second download(_:with:)", hint: Self.hint) {
      try await download(Self.report, with: downloader)
    }

    #expect(data == Self.reportData)
    #expect(downloader.downloadsStarted == 2)
    #expect(downloader.downloadsCancelled == 1)
  }

  @Test(
    "A cancel before or while the download starts, answered inside DownloadTask.cancel(), throws CancellationError",
    arguments: ["before the call", "while the download starts"])
  func earlyCancelAnsweredInsideCancel(when: String) async throws {
    // The downloader's cancelled reply comes inside cancel(), on the thread that calls it:
    // here, the bridge's own thread, as it finds the task was cancelled before it could
    // store the download.
    let cancelWhileStarting: (@Sendable () -> Void)? =
      when == "before the call" ? nil : { @Sendable in withUnsafeCurrentTask { _ = $0?.cancel() } }
    let downloader = Self.makeDownloader(
      delivery: .never, cancelReply: .synchronously, whileStarting: cancelWhileStarting)

    await #expect(
      throws: CancellationError.self,
      "the task was cancelled \(when): \(Self.throwsCancellationError)"
    ) {
      try await withDeadline(
        .seconds(2), "download(_:with:), cancelled \(when)",
        hint: """
          the downloader answered the cancel inside DownloadTask.cancel(), on the thread that \
          called it, and that answer never reached the caller: cancel() can call the \
          completion handler before it returns, so it must be called with no lock held that \
          the handler, or anything it calls, takes
          """
      ) {
        if when == "before the call" { withUnsafeCurrentTask { $0?.cancel() } }
        return try await download(Self.report, with: downloader)
      }
    }
    #expect(downloader.downloadsStarted == 1)
    #expect(
      downloader.downloadsRunning == 0,
      "the cancel never reached the DownloadTask: the download is still running")
  }
}
