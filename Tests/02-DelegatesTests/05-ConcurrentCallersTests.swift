import Dispatch
import Foundation
import LegacyKit
import Synchronization
import Testing
import WorkbookTesting

@testable import Delegates

private let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(100))]
/// Late enough that every caller of a test has asked before the scan ends.
private let late = CallbackScript.later(.milliseconds(300))

private let ean = "4006381333931"
private let isbn = "9780201633610"

private let scanHint =
  "the scanner's answer must resume the waiting caller: barcodeScanner(_:didScan:) with the "
  + "code, barcodeScanner(_:didFailWithError:) with the error"
private let againHint =
  "a scan() after the first never returns: empty the list of waiting callers when you "
  + "resume them, and start the scanner for the first caller of each new scan"
private let storeFirstHint =
  "this scanner answered inside startScanning(), before it returned, and your continuation "
  + "was not on the list of waiting callers yet, so the answer found nobody; store or "
  + "subscribe before you start: add the caller to the list first, then start the scanner"
private let sharedHint =
  "a caller who asked while a scan was running was never resumed; a second continuation "
  + "must not replace the first, or be dropped: keep every waiting caller and resume each "
  + "of them when the scan ends"

/// Starts `count` calls to `scan()` at once and waits for every one of them, each within a
/// deadline, before anything is checked: a caller that never returns is reported as such,
/// whatever happened to the others.
private func scanAtOnce(
  _ scanner: SharedBarcodeScanner, callers count: Int, hint: String = sharedHint
) async throws -> [Result<String, any Error>] {
  let calls = (0..<count).map { _ in Task { try await scanner.scan() } }
  var results: [Result<String, any Error>] = []
  for (index, call) in calls.enumerated() {
    let result = try await withDeadline(
      .seconds(2), "scan() of caller \(index + 1) of \(count)", hint: hint
    ) {
      await call.result
    }
    results.append(result)
  }
  return results
}

/// The codes the callers got, in order; an error counts as no code.
private func codes(_ results: [Result<String, any Error>]) -> [String?] {
  results.map { try? $0.get() }
}

/// The scanner's reports, held until the test lets them go and then told in order on a
/// queue of their own; once let go, later reports go straight to that queue.
private final class HeldReports: Sendable {
  private let state = Mutex<(released: Bool, held: [@Sendable () -> Void])>((false, []))
  private let queue = DispatchQueue(label: "workbook.held-scanner-reports")

  var script: CallbackScript {
    CallbackScript(
      timing: .scheduled(
        CallbackScheduler(name: "the scanner's held reports") { [self] work in hold(work) }))
  }

  /// How many reports are held now.
  var heldCount: Int { state.withLock { $0.held.count } }

  /// Lets the held reports go, each through `deliver` (the queue of these reports unless
  /// told otherwise).
  func release(through deliver: ((@escaping @Sendable () -> Void) -> Void)? = nil) {
    let held = state.withLock { state in
      state.released = true
      defer { state.held = [] }
      return state.held
    }
    for work in held {
      if let deliver { deliver(work) } else { queue.async(execute: work) }
    }
  }

  private func hold(_ work: @escaping @Sendable () -> Void) {
    let goesNow = state.withLock { state in
      if !state.released { state.held.append(work) }
      return state.released
    }
    if goesNow { queue.async(execute: work) }
  }
}

/// Why the scanner was started once too often, when a caller read its `isScanning`.
private let startedFromIsScanning =
  "Your code read the scanner's isScanning, and a caller started the scanner because it read "
  + "false although other callers were already waiting for a scan: the extra start is "
  + "answered busy, or starts a scan nobody waits for, which takes the next code. isScanning "
  + "tells whether the camera is busy, not whether your callers' scan has been answered: it "
  + "reads false before the first caller's start has gone through, and again once a scan is "
  + "over but before its report has reached your delegate. Only the caller who finds nobody "
  + "waiting starts a scan"

/// Spins on this thread, yielding it, until `condition` holds or `limit` has passed: for a
/// test's own thread (never one of the pool) that must go on within microseconds.
private func spin(upTo limit: Duration, until condition: () -> Bool) {
  let deadline = ContinuousClock.now.advanced(by: limit)
  while !condition(), ContinuousClock.now < deadline { sched_yield() }
}

/// The contract of `SharedBarcodeScanner.scan()`: each path, what the callers and the scanner
/// see, and the test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | scanner starts, waiting list | thread, timing |
/// | --- | --- | --- | --- |
/// | one caller (inside the call, soon, later) | the code: `storesBeforeStarting`, `oneCallerAfterAnother` | stored before starting: `storesBeforeStarting` | — |
/// | two, or many, callers at once | one scan, its code to all: `twoCallersShareOneScan`, `manyCallersShareOneScan` | one start: `twoCallersShareOneScan`, `manyCallersShareOneScan` | — the callers may be resumed by work that runs after the report (a shared task), once the report has taken them off the list: the scanner reports once per scan, so nothing can answer them twice |
/// | the scan fails | its error to every caller: `aFailureReachesEveryCaller` | — | — |
/// | one caller after another | a fresh scan each: `oneCallerAfterAnother` | emptied when answered: `oneCallerAfterAnother` | — |
/// | callers after a shared scan ended | a new shared scan: `laterCallersShareANewScan`; one who comes once the report is over, while tasks from the scanner's thread run late: `callerAfterTheReportGetsANewScan` (callers answered from a task of their own, or from an actor reached through one: caught by hand and on some runner runs, not every run, so not catalogued either way) | — | answered within the report: `callerAfterTheReportGetsANewScan` |
/// | the same scan reported twice | one resume each: `answersOnceWhenReportedTwice`; a failure too: `afterAFailedScan` | — | — |
/// | a caller after a failed scan | a new scan: `afterAFailedScan` | emptied by the failure: `afterAFailedScan` | — |
/// | two callers deciding from the scanner's own state at the same moment | one scan, its code to both: `callersDecidingTogetherShareOneScan` (the scanner holds a reader of `isScanning` until the second one reads) | never busy: `callersDecidingTogetherShareOneScan` | — |
/// | two callers in the same nanoseconds | one scan, its code to both: `callersAtTheSameInstantShareOneScan` (two threads released together, round after round) | one start: `callersAtTheSameInstantShareOneScan` | — |
/// | a caller joining while the report answers the others | a scan of its own: `callerArrivingDuringTheReport` (it asks while the report is inside its first resume) | a second start: `callerArrivingDuringTheReport` | — |
/// | a caller joining at the instant the report comes | answered, by that scan or a new one: `callerAtTheInstantOfTheReport` (report and caller released together, round after round) | — | — |
/// | a waiting caller cancelled while its scan runs, alone or with others | the others, and a caller who asks next, get the scan's code: `cancelledCallerLeavesTheScanRunning` (the cancelled caller: the code or CancellationError) | no second start: `cancelledCallerLeavesTheScanRunning` | — |
/// | scans that read the same code as the scan before (the same product scanned again) | each answers its own callers: `sameCodeAgainIsANewScan` | one start each: `sameCodeAgainIsANewScan` | — |
/// | cancelled task (before, after) | — scan() promises nothing for a cancelled task: the scanner always reports | | |
@Suite("2.5 Concurrent callers")
struct ConcurrentCallersTests {
  // First in the file on purpose: when several tests fail, the runner shows the first one,
  // and this one tells "stored too late" apart from "never resumed at all".
  @Test("Stores the caller before starting the scanner: a scanner may answer inside the call")
  func storesBeforeStarting() async throws {
    // A scanner that answers later works even if the caller is stored after starting...
    let later = SharedBarcodeScanner(
      scanner: BarcodeScanner(scans: [.code(ean)], script: .later(.milliseconds(300))))
    let first = try await withDeadline(.seconds(2), "scan()", hint: scanHint) {
      try await later.scan()
    }
    #expect(first == ean, "the scanner read \(ean)")

    // ...but one that answers before startScanning() returns finds nobody to resume.
    let atOnce = SharedBarcodeScanner(
      scanner: BarcodeScanner(scans: [.code(isbn)], script: .synchronously))
    let second = try await withDeadline(
      .seconds(2), "scan() with a scanner that answers inside startScanning()",
      hint: storeFirstHint
    ) {
      try await atOnce.scan()
    }
    #expect(second == isbn, "the scanner read \(isbn)")
  }

  @Test("Two callers at once share one scan and both get its code")
  func twoCallersShareOneScan() async throws {
    let scanner = BarcodeScanner(scans: [.code(ean), .code(isbn)], script: late)
    let shared = SharedBarcodeScanner(scanner: scanner)

    let results = try await scanAtOnce(shared, callers: 2)

    #expect(
      scanner.startCount == 1,
      "start the scanner once for callers who ask during a scan: a second start gets busy")
    #expect(
      throws: Never.self, "every caller who asked during the scan gets its code, not an error"
    ) { try results.map { try $0.get() } }
    #expect(codes(results) == [ean, ean], "scan() must return the code the scanner read")
  }

  @Test("Two callers deciding at the same moment share one scan, whatever they look at")
  func callersDecidingTogetherShareOneScan() async throws {
    let scanner = BarcodeScanner(scans: [.code(ean), .code(isbn)], script: late)
    // Whoever asks the scanner whether it is busy is held there (at most 300 ms) until a
    // second caller has asked too: both then act on the same answer.
    let readers = Locked(0)
    let secondRead = DispatchSemaphore(value: 0)
    scanner.onIsScanningRead = {
      let arrival = readers.withLock { count in
        count += 1
        return count
      }
      if arrival == 1 {
        _ = secondRead.wait(timeout: .now() + .milliseconds(300))
      } else if arrival == 2 {
        secondRead.signal()
      }
    }
    let shared = SharedBarcodeScanner(scanner: scanner)
    // Two threads of their own, so that both callers run at once on any number of cores.
    let (left, right) = (OneThreadExecutor(), OneThreadExecutor())
    let callers = [left, right].map { executor in
      Task(executorPreference: executor) { try await shared.scan() }
    }

    var results: [Result<String, any Error>] = []
    for caller in callers {
      results.append(
        try await withDeadline(.seconds(2), "scan() of two callers at once", hint: scanHint) {
          await caller.result
        })
    }
    #expect(
      scanner.busyCount == 0 && codes(results) == [ean, ean],
      """
      two callers who asked at the same moment got \(codes(results)) and the scanner \
      was started \(scanner.startCount) times: both decided to start it, because each \
      decided from something another caller could change before it acted (here, the \
      scanner's isScanning); which caller starts the scan must be decided in the same \
      locked step that adds it to the waiting callers
      """)
  }

  @Test("Many callers at once share one scan", arguments: [3, 10, 50])
  func manyCallersShareOneScan(callers: Int) async throws {
    let scanner = BarcodeScanner(scans: [.code(ean), .code(isbn)], script: late)
    let shared = SharedBarcodeScanner(scanner: scanner)

    let results = try await scanAtOnce(shared, callers: callers)

    #expect(scanner.startCount == 1, "start the scanner once, for the first caller")
    #expect(
      throws: Never.self, "every caller who asked during the scan gets its code, not an error"
    ) { try results.map { try $0.get() } }
    #expect(
      codes(results) == Array(repeating: ean, count: callers),
      "scan() must return the code the scanner read")
  }

  @Test("Two callers released at the same instant, round after round, share one scan")
  func callersAtTheSameInstantShareOneScan() async throws {
    // Each round, two callers on two threads released together, each after a random few
    // hundred nanoseconds, so that one comes between the other's look at the waiting
    // callers and its joining them, whenever those are two steps. The rounds go 50 at a
    // time, each thread running its side of one round after another with no wait between,
    // so that a busy machine still runs many; the scans' reports are held until every
    // caller has gone as far as it can.
    try await raceRounds { left, right in
      let rounds = (0..<50).map { _ in
        let reports = HeldReports()
        let scanner = BarcodeScanner(scans: [.code(ean), .code(isbn)], script: reports.script)
        return (reports, scanner, SharedBarcodeScanner(scanner: scanner), StartLine(parties: 2))
      }
      // Whether a caller asked the scanner if it was busy: a scan started by a caller who
      // read `isScanning` has a cause of its own.
      let isScanningReads = Locked(0)
      for (_, scanner, _, _) in rounds {
        scanner.onIsScanningRead = { isScanningReads.withLock { $0 += 1 } }
      }
      let jobs = (left.jobsRun, right.jobsRun)
      let callers = [left, right].flatMap { executor in
        rounds.map { _, _, shared, line in
          Task(executorPreference: executor) { () throws -> String in
            line.go(jitter: 0...600)
            return try await shared.scan()
          }
        }
      }
      // Gone as far as they can: each thread has run its 50 callers and then nothing more
      // for a whole slice of the wait (an actor or a task may take a job or two more).
      var seen = (-1, -1)
      _ = await eventually {
        let now = (left.jobsRun, right.jobsRun)
        defer { seen = now }
        return now == seen && now.0 >= jobs.0 + 50 && now.1 >= jobs.1 + 50
          && left.currentJobAge == nil && right.currentJobAge == nil
      }
      for (reports, _, _, _) in rounds { reports.release() }
      let results = try await withDeadline(
        .seconds(5), "scan() of two callers released at the same instant, 50 rounds",
        hint: scanHint
      ) {
        var results: [Result<String, any Error>] = []
        for caller in callers { results.append(await caller.result) }
        return results
      }
      // Caller i of the left thread and caller i of the right shared round i.
      for (index, (_, scanner, _, _)) in rounds.enumerated() {
        let pair = codes([results[index], results[rounds.count + index]])
        guard scanner.startCount == 1, pair == [ean, ean] else {
          if isScanningReads.value > 0, scanner.startCount > 1 {
            Issue.record(
              Comment(
                rawValue: "two callers who asked at the same instant got "
                  + "\(pair.map { $0 ?? "an error" }) and the scanner was started "
                  + "\(scanner.startCount) times. " + startedFromIsScanning))
            return false
          }
          Issue.record(
            """
            two callers who asked at the same instant got \(pair.map { $0 ?? "an error" }) \
            and the scanner was started \(scanner.startCount) times: each looked at the \
            waiting callers before the other had joined them, so both thought they were \
            first. Joining and finding out whether you are first must be one step
            """)
          return false
        }
      }
      return true
    }
  }

  @Test("A caller who asks while the report answers the others gets a scan of its own")
  func callerArrivingDuringTheReport() async throws {
    let reports = HeldReports()
    let scanner = BarcodeScanner(scans: [.code(ean), .code(isbn)], script: reports.script)
    let shared = SharedBarcodeScanner(scanner: scanner)
    let probe = ResumeProbeExecutor()
    let first = Task(executorPreference: probe) { try await shared.scan() }
    try #require(
      await eventually { scanner.startCount == 1 }, "scan() did not start the scanner")

    // While the report is inside its resume of the first caller, a second caller asks, and
    // goes as far as it can (a scan of its own, within half a second): a report that
    // answers the callers it read and empties the list in a later step is caught between.
    let second = Locked<Task<String, any Error>?>(nil)
    probe.onNextResume {
      let task = Task(executorPreference: OneThreadExecutor()) { try await shared.scan() }
      second.withLock { $0 = task }
      _ = waitOnThisThread(upTo: .milliseconds(500)) { scanner.startCount == 2 }
    }
    reports.release()

    let answers = try await withDeadline(
      .seconds(3), "scan() of a caller who asked while the report answered the first",
      likelyCause: {
        guard probe.probesFired == 1 else { return scanHint }
        if scanner.startCount >= 2, scanner.reportCount >= 2, scanner.delegate !== shared {
          return "the caller who asked while the report answered the first got a scan of its "
            + "own, and that scan was reported, but the scanner no longer had your object as "
            + "its delegate by then: the delegate was taken away (set to nil, or replaced) "
            + "after that new scan had begun, by the report of the scan before, so the new "
            + "scan's code reached nobody. Whatever the report of one scan does after "
            + "answering its callers also happens to the next scan, already running"
        }
        return "the report answered the callers it had found, and only in a later step made "
          + "way for a new scan (emptied the list of waiting callers in a later step, or "
          + "cleared a flag saying a scan runs); a caller who asked in between found a scan "
          + "still running and waited for it, but that scan had already been reported. "
          + "Taking the callers out must leave the list empty, and the scanner free for the "
          + "next caller, in the same step"
      }
    ) {
      let code = try await first.value
      return [code, try await second.value?.value]
    }
    #expect(
      answers == [ean, isbn],
      """
      a caller who asked after the scan had ended (while its report was answering the \
      others) must get a new scan; the callers got \(answers.map { $0 ?? "nil" })
      """)
  }

  @Test("A caller who asks at the instant the report comes, round after round, is answered")
  func callerAtTheInstantOfTheReport() async throws {
    // Each round, one caller waits for a scan; its report and more callers are released
    // together on two threads, each after a random offset, so that a caller comes
    // between the report's look at the waiting callers and the emptying of the list,
    // whenever those are two steps. The report has more to do before it looks than the
    // caller before it joins, so the offsets spread wider than two callers' do. Either way
    // the caller must be answered: by this scan if it joined in time, or by a new one. A
    // caller left waiting is judged when the rounds stop, not by a deadline: the other race
    // tests of this exercise name the same split steps as failures.
    try await raceRounds { left, right in
      // Each round's codes, and how many times its scanner was started.
      let finished = Locked<[(codes: [String], starts: Int)]>([])
      // The round under way, and whether a caller asked a scanner if it was busy: what a
      // failure says depends on them.
      let current = Locked<(BarcodeScanner, SharedBarcodeScanner)?>(nil)
      let isScanningReads = Locked(0)
      let batch = Task {
        for _ in 0..<50 {
          let reports = HeldReports()
          let scanner = BarcodeScanner(scans: [.code(ean), .code(isbn)], script: reports.script)
          scanner.onIsScanningRead = { isScanningReads.withLock { $0 += 1 } }
          let shared = SharedBarcodeScanner(scanner: scanner)
          current.withLock { $0 = (scanner, shared) }
          let line = StartLine(parties: 2)
          // The second caller starts once the report of the first caller's scan is held (an
          // actor or a task of its own may take a moment to start the scan).
          let first = Task { try await shared.scan() }
          // Eight callers, one after another on one thread, the first released with the
          // report: whatever the offset, one of them is likely to ask in the gap.
          let later = (0..<8).map { index in
            Task(executorPreference: left) { () throws -> String in
              if index == 0 {
                spin(upTo: .seconds(2)) { reports.heldCount >= 1 }
                reports.release { report in
                  right.schedule {
                    line.go(jitter: 0...3_000)
                    report()
                  }
                }
                line.go(jitter: 0...3_000)
              }
              return try await shared.scan()
            }
          }
          var pair = [(try? await first.value) ?? "an error"]
          for caller in later { pair.append((try? await caller.value) ?? "an error") }
          finished.withLock { $0.append((pair, scanner.startCount)) }
        }
      }
      guard await eventually(within: .seconds(5), { finished.value.count == 50 }) else {
        batch.cancel()
        if let (scanner, shared) = current.value, scanner.delegate !== shared {
          Issue.record(
            """
            a caller who asked around the instant the scan's report came was never answered, \
            and the scanner no longer had your object as its delegate: it was taken away (set \
            to nil, or replaced) while a scan was still to report, so that scan's code reached \
            nobody
            """)
          return false
        }
        Issue.record(
          """
          a caller who asked at the instant the scan's report came was never answered. \
          Either it joined the waiting callers as the report took them, and no scan was \
          started for it: something was decided in one step and acted on in another, the \
          report looked at the waiting callers and emptied the list in two steps, or the \
          caller looked whether it was first and joined the list in two (each must be one \
          step); or a scan was started for it and its report answered nobody, taken for a \
          repeat of the scan before
          """)
        return false
      }
      let wrongRound = finished.value.first { codes, _ in
        codes[0] != ean || codes.dropFirst().contains { $0 != ean && $0 != isbn }
      }
      guard let (wrong, starts) = wrongRound else { return true }
      // A scan whose code nobody got, or a start answered busy, was one start too many.
      let codesGiven = Set(wrong.filter { $0 == ean || $0 == isbn }).count
      if isScanningReads.value > 0, starts > codesGiven {
        Issue.record(
          Comment(
            rawValue: "a caller who asked at the instant the report came must get that "
              + "scan's code or a new scan's; the callers got \(wrong). "
              + startedFromIsScanning))
        return false
      }
      Issue.record(
        """
        a caller who asked at the instant the report came must get that scan's code or a \
        new scan's; the callers got \(wrong)
        """)
      return false
    }
  }

  @Test("A failed scan throws its error to every caller who was waiting for it")
  func aFailureReachesEveryCaller() async throws {
    let scanner = BarcodeScanner(scans: [.failure(.cameraUnavailable)], script: late)
    let shared = SharedBarcodeScanner(scanner: scanner)

    let results = try await scanAtOnce(
      shared, callers: 5,
      hint: "the scan failed, and its callers were left waiting: a failed scan must answer "
        + "every waiting caller with its error (barcodeScanner(_:didFailWithError:)), as a "
        + "code answers them all")

    #expect(scanner.startCount == 1, "start the scanner once, for the first caller")
    for result in results {
      #expect(
        throws: ScannerError.cameraUnavailable,
        "a failed scan throws its error to every caller who was waiting for it"
      ) { try result.get() }
    }
  }

  /// The tests in which a later scan, or a repeated report, can reach callers who have been
  /// answered already. A wrong answer crashes them, so they run one at a time and a crash
  /// names a single test.
  @Suite("One scan after another", .serialized)
  struct OneAfterAnother {
    @Test("One caller after another each get a fresh scan", arguments: scripts)
    func oneCallerAfterAnother(script: CallbackScript) async throws {
      let scanner = BarcodeScanner(scans: [.code(ean), .code(isbn)], script: script)
      let shared = SharedBarcodeScanner(scanner: scanner)

      let first = try await withDeadline(.seconds(2), "scan()", hint: scanHint) {
        try await shared.scan()
      }
      let second = try await withDeadline(.seconds(2), "a second scan()", hint: againHint) {
        try await shared.scan()
      }

      #expect(first == ean, "scan() must return the code the scanner read")
      #expect(second == isbn, "a caller who comes after a scan has ended gets a new scan")
      #expect(scanner.startCount == 2, "each scan starts the scanner once")
    }

    @Test("Callers who come after a shared scan has ended share a new one")
    func laterCallersShareANewScan() async throws {
      let scanner = BarcodeScanner(scans: [.code(ean), .code(isbn)], script: late)
      let shared = SharedBarcodeScanner(scanner: scanner)

      let firstWave = try await scanAtOnce(shared, callers: 3)
      let secondWave = try await scanAtOnce(shared, callers: 3)

      #expect(scanner.startCount == 2, "each wave of callers starts one scan")
      #expect(codes(firstWave) == [ean, ean, ean], "scan() must return the code the scanner read")
      #expect(
        codes(secondWave) == [isbn, isbn, isbn], "scan() must return the code the scanner read")
    }

    @Test("A caller who comes once the scan's report is over gets a new scan, whenever tasks run")
    func callerAfterTheReportGetsANewScan() async throws {
      let scanner = BarcodeScanner(scans: [.code(ean), .code(isbn)], script: late)
      let shared = SharedBarcodeScanner(scanner: scanner)

      // Work that the scanner's thread hands to tasks runs 100 ms late, as on a busy machine:
      // a report must be over, every waiting caller answered, by the time the delegate
      // returns.
      let (firstCode, secondCode) = try await withPlainThreadJobsReordered(
        window: .milliseconds(100)
      ) {
        async let first = withDeadline(.seconds(2), "the first scan()", hint: scanHint) {
          try await shared.scan()
        }
        _ = await eventually { scanner.reportCount >= 1 }
        let second = try await withDeadline(
          .seconds(2), "a scan() once the first scan's report was over", hint: scanHint
        ) {
          try await shared.scan()
        }
        return (try await first, second)
      }

      #expect(firstCode == ean, "scan() must return the code the scanner read")
      #expect(
        secondCode == isbn && scanner.startCount == 2,
        "a caller who came once the scanner's report was over got \(secondCode), with \(scanner.startCount) scan\(scanner.startCount == 1 ? "" : "s") started: that report had already answered everyone waiting, so this caller is the first of a new scan. Answering the callers in a task of its own leaves them on the list after the report, where a new caller joins the old scan"
      )
    }

    @Test("A failed scan reported twice answers each caller once; the next caller gets a new scan")
    func afterAFailedScan() async throws {
      let scanner = BarcodeScanner(
        scans: [.failure(.cameraUnavailable), .code(isbn)],
        script: CallbackScript(timing: .after(.milliseconds(100)), times: 2))
      let shared = SharedBarcodeScanner(scanner: scanner)

      let failed = try await scanAtOnce(
        shared, callers: 3,
        hint: "the scan failed, and its callers were left waiting: a failed scan must answer "
          + "every waiting caller with its error")
      // Wait for the second report too, so that resuming a caller again happens while this
      // test is running.
      let bothReported = await eventually { scanner.reportCount == 2 }
      let next = try await withDeadline(
        .seconds(2), "a scan() after a failed scan",
        hint: "a scan() after a failed scan never returns: a failed scan ends as a read one "
          + "does, its callers taken off the list, so that the next caller starts a new scan"
      ) {
        try await shared.scan()
      }

      for result in failed {
        #expect(
          throws: ScannerError.cameraUnavailable,
          "a failed scan throws its error to every caller who was waiting for it"
        ) { try result.get() }
      }
      #expect(bothReported, "the scanner's second report did not finish")
      #expect(next == isbn, "a caller who comes after a failed scan gets a new scan")
    }

    @Test("Every caller is answered once when the scanner reports the same scan twice")
    func answersOnceWhenReportedTwice() async throws {
      let scanner = BarcodeScanner(
        scans: [.code(ean)], script: CallbackScript(timing: .after(.milliseconds(300)), times: 2))
      let shared = SharedBarcodeScanner(scanner: scanner)

      let results = try await scanAtOnce(shared, callers: 3)
      // Wait for the second report too, so that resuming a caller again happens while this
      // test is running.
      let bothReported = await eventually { scanner.reportCount == 2 }

      #expect(codes(results) == [ean, ean, ean], "scan() must return the code the scanner read")
      #expect(bothReported, "the scanner's second report did not finish")
    }
  }

  @Test(
    "A caller cancelled while its scan runs leaves that scan to the others, and to whoever asks next"
  )
  func cancelledCallerLeavesTheScanRunning() async throws {
    // First with another caller waiting for the same scan, then with the cancelled caller
    // alone; either way a caller asks after the cancel, while the scan still runs. Every
    // caller runs its code up to its first suspension on an executor that says when it
    // has nothing left to run, and the scan's report is held until then.
    for company in [1, 0] {
      let reports = HeldReports()
      let scanner = BarcodeScanner(scans: [.code(ean), .code(isbn)], script: reports.script)
      let shared = SharedBarcodeScanner(scanner: scanner)
      let settling = SettlingExecutor()
      let cancelled = Task(executorPreference: settling) { try await shared.scan() }
      let others = (0..<company).map { _ in
        Task(executorPreference: settling) { try await shared.scan() }
      }
      // (A scan run by a task of its own may start the scanner after its callers wait.)
      try #require(
        await eventually {
          settling.isIdle && settling.jobsRun >= 1 + company && scanner.startCount == 1
        }, "scan() did not start the scanner for the first caller")
      cancelled.cancel()
      let next = Task(executorPreference: settling) { try await shared.scan() }
      _ = await eventually { settling.isIdle && settling.jobsRun >= 2 + company }
      reports.release()

      let answers = try await withDeadline(
        .seconds(2), "scan() of callers who shared a scan, one of them cancelled", hint: scanHint
      ) {
        var answers: [Result<String, any Error>] = []
        for caller in others + [next] { answers.append(await caller.result) }
        _ = await cancelled.result
        return answers
      }
      let who = company == 0 ? "the only caller" : "one of two callers"
      let wrong = answers.compactMap { answer -> String? in
        switch answer {
        case .success(let code): code == ean ? nil : code
        case .failure(let error): "\(error)"
        }
      }
      guard wrong.isEmpty else {
        Issue.record(
          Comment(
            rawValue: "\(who) waiting for a scan was cancelled, and the callers who still "
              + "waited for it, or asked while it ran, got \(wrong), not the scan's code "
              + "\(ean): a cancelled caller may leave, but the others asked for a code and "
              + "still want it; cancelling one of them is not cancelling the scan"))
        return
      }
      guard scanner.startCount == 1 else {
        Issue.record(
          Comment(
            rawValue: "\(who) waiting for a scan was cancelled, and a caller who asked while "
              + "that scan still ran started the scanner again (\(scanner.startCount) starts, "
              + "\(scanner.busyCount) answered busy): the cancelled caller's leaving made the "
              + "scan look over, though the scanner was still scanning. Whether a scan runs "
              + "is not the same as whether anyone waits for it; a caller who asks during "
              + "the scan shares it"))
        return
      }
    }
  }

  @Test("Scans that read the same code as the scan before each answer their own callers")
  func sameCodeAgainIsANewScan() async throws {
    // Every scan reads the same code, as when the same product is scanned twice: each
    // scan is new, and only a report of a scan whose callers were answered is a repeat.
    let scanner = BarcodeScanner(scans: [.code(ean)])
    let shared = SharedBarcodeScanner(scanner: scanner)

    for number in 1...3 {
      let code = try await withDeadline(
        .seconds(2), "scan() number \(number), its scan reading \(ean) as the one before",
        likelyCause: {
          guard number > 1, scanner.startCount == number, scanner.reportCount >= number else {
            return number == 1 ? scanHint : againHint
          }
          return "this caller's scan was started and reported its code, \(ean), the code the "
            + "scan before had read, and the caller was never answered: the report was taken "
            + "for a repeat of the scan before. The same code twice is two scans (the same "
            + "product scanned again); a repeated report is one that comes when the scan's "
            + "callers have been answered already"
        }
      ) {
        try await shared.scan()
      }
      #expect(code == ean, "scan() must return the code the scanner read")
    }
    #expect(scanner.startCount == 3, "each of three callers, one after another, starts a scan")
  }
}
