import Foundation

/// Runs one exercise's suite in a process of its own, so a crash or a hang stops only that
/// exercise.
public enum TestLauncher {
  /// Backtraces on (the isolation trap prints nothing else), plain text, only the crashed
  /// thread, no registers or image list.
  public static let backtraceSetting =
    "enable=yes,interactive=no,color=no,threads=crashed,registers=none,images=none"

  /// Set to "1" for the suites' long form: stress tests that need many rounds to catch a
  /// rare interleaving run them all (`workbook verify` and `mistakes`), while a learner's
  /// check runs the short form, so that saving a file gets its verdict within seconds.
  /// WorkbookTesting's `stress(grading:verify:)` reads it.
  public static let longTestsKey = "WORKBOOK_LONG_TESTS"

  public static func run(
    product: URL, filter: String, request: BuildRequest, timeout: Double,
    longTests: Bool = false, shortForm: Bool = false
  ) throws(WorkbookError) -> SuiteRun {
    let events = FileManager.default.temporaryDirectory
      .appendingPathComponent("workbook-events-\(getpid())-\(UUID().uuidString).jsonl")
    defer { try? FileManager.default.removeItem(at: events) }
    // A temporary folder of the run's own, removed after it: downloads and files the tests
    // or the learner's code leave behind do not pile up in the machine's, where a test that
    // looks for a file would have to read through thousands.
    let temporary = FileManager.default.temporaryDirectory
      .appendingPathComponent("workbook-tmp-\(getpid())-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: temporary) }
    var environment: [String: String?] = [
      "TMPDIR": temporary.path + "/",
      "SWIFT_BACKTRACE": backtraceSetting,
      "NO_COLOR": "1",
      ThrownExplanation.environmentKey: "1",
    ].merging(request.environment) { mine, _ in mine }
    // A learner may ask for the long form themselves: without `shortForm` (which only
    // `mistakes` asks for), the variable is set here, never removed.
    if longTests { environment[longTestsKey] = "1" }
    if shortForm { environment[longTestsKey] = .some(nil) }

    var isDirectory: ObjCBool = false
    _ = FileManager.default.fileExists(atPath: product.path, isDirectory: &isDirectory)
    let outcome: ProcessOutcome
    if !isDirectory.boolValue {
      // Linux: the test product is an executable that runs Swift Testing itself.
      outcome = try ChildProcess.run(
        product.path,
        [
          "--testing-library", "swift-testing", "--filter", filter,
          "--event-stream-output-path", events.path, "--event-stream-version", "0",
        ],
        environment: environment, in: request.root, timeout: timeout, crashGrace: 5,
        blockedGrace: 8)
    } else {
      // macOS: the test product is a bundle; let SwiftPM load it (not exercised on Linux).
      guard let swift = ChildProcess.which("swift") else {
        throw .failure("cannot find `swift` on PATH")
      }
      outcome = try ChildProcess.run(
        swift,
        [
          "test", "--skip-build", "--disable-xctest", "--package-path", request.root.path,
          "--scratch-path", request.scratchURL.path, "--filter", filter,
          "--event-stream-output-path", events.path, "--event-stream-version", "0",
        ],
        environment: environment, in: request.root, timeout: timeout, crashGrace: 5,
        blockedGrace: 8)
    }
    let log = EventStreamParser.parse(ChildProcess.readText(events))
    return SuiteRun(outcome: outcome, events: log)
  }
}
