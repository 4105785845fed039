import Dispatch
import LegacyKit
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

/// The contract of `SharedBarcodeScanner.scan()`: each path, what the callers and the scanner
/// see, and the test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | scanner starts, waiting list | thread, timing |
/// | --- | --- | --- | --- |
/// | one caller (inside the call, soon, later) | the code: `storesBeforeStarting`, `oneCallerAfterAnother` | stored before starting: `storesBeforeStarting` | — |
/// | two, or many, callers at once | one scan, its code to all: `twoCallersShareOneScan`, `manyCallersShareOneScan` | one start: `twoCallersShareOneScan`, `manyCallersShareOneScan` | — the callers may be answered by work that runs after the report (an actor, a shared task): the scanner reports once per scan, so nothing can answer them twice |
/// | the scan fails | its error to every caller: `aFailureReachesEveryCaller` | — | — |
/// | one caller after another | a fresh scan each: `oneCallerAfterAnother` | emptied when answered: `oneCallerAfterAnother` | — |
/// | callers after a shared scan ended | a new shared scan: `laterCallersShareANewScan` | — | — |
/// | the same scan reported twice | one resume each: `answersOnceWhenReportedTwice` | — | — |
/// | two callers deciding from the scanner's own state at the same moment | one scan, its code to both: `callersDecidingTogetherShareOneScan` (the scanner holds a reader of `isScanning` until the second one reads) | never busy: `callersDecidingTogetherShareOneScan` | — |
/// | two callers in the same nanoseconds, a caller joining between the take and the clear | — only thread interleaving reaches a gap between two steps of the learner's own lock, with no call into the scanner or the runtime between them: the many-callers tests race them, but cannot catch it every run | | |
/// | cancelled task (before, during, after) | — scan() promises nothing for a cancelled task: the scanner always reports | | |
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
}
