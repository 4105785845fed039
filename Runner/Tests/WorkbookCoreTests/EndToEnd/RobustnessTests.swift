import Foundation
import Testing

@testable import WorkbookCore

/// Runs the built `workbook` on the HostileWorkbook fixture (an exercise that passes, one
/// whose test prints 40 MB, one whose test never ends and starts a helper process in a
/// group of its own, and one whose starter these tests delete) and checks that bad input
/// and hostile conditions end in clear messages, correct verdicts and no process left.
///
/// The fixture is copied to Runner/.build/hostile/HostileWorkbook (kept warm between runs,
/// like the golden tests' copy); that path in a command line marks the processes it
/// started.
@Suite(
  .serialized, .offThePool, .timeLimit(.minutes(10)),
  .enabled(if: FileManager.default.fileExists(atPath: "/proc/self/stat"), "reads /proc"))
struct RobustnessTests {
  static let fixture = Fixtures.folder.appendingPathComponent("HostileWorkbook")
  static let work = Fixtures.folder.deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent(".build/hostile/HostileWorkbook")
  static var progressURL: URL { ProgressStore(root: work).url }
  static var marker: String { work.path }

  init() throws {
    try Fixtures.sync(Self.fixture, to: Self.work)
    try? FileManager.default.removeItem(at: Self.work.appendingPathComponent(".workbook"))
  }

  // MARK: bad input

  @Test func unknownChapterOrExerciseExitsTwoListingTheValidOnes() throws {
    let chapters = "Valid chapters: 1 (Hostile)."
    let exercises = "Valid exercises: 1.1, 1.2, 1.3, 1.4."
    let cases: [([String], String)] = [
      (["check", "--chapter", "9"], "workbook: there is no chapter 9. \(chapters)"),
      (["check", "--exercise", "9.9"], "workbook: there is no exercise 9.9. \(exercises)"),
      (["hint", "9.9"], "workbook: there is no exercise 9.9. \(exercises)"),
      (["watch", "--chapter", "9"], "workbook: there is no chapter 9. \(chapters)"),
      (["verify", "--chapter", "9"], "workbook: there is no chapter 9. \(chapters)"),
    ]
    for (arguments, message) in cases {
      let result = try Self.workbook(arguments)
      #expect(result.status == 2, "\(arguments)")
      #expect(result.stdout == "", "\(arguments)")
      #expect(result.stderr == message + "\n", "\(arguments)")
    }
  }

  @Test func aCorruptProgressFileIsReportedOnceAndReplaced() throws {
    try Self.writeProgress(Data("{\"format\": 1, \"exercises\": [oops".utf8))
    let result = try Self.workbook(["check", "--exercise", "1.1"])
    #expect(result.status == 0)
    #expect(result.stdout.contains("✔ 1.1  Adding  passed"))
    #expect(
      result.stderr
        == "workbook: .workbook/progress.json was unreadable (not valid progress data); "
        + "starting a new one (earlier verdicts and hint counts are forgotten)\n")
    let progress = ProgressStore(root: Self.work).load { Issue.record("notice: \($0)") }
    #expect(progress["1.1"].verdict == .passed)
  }

  @Test func gradingGoesOnWhenTheProgressFolderIsAFile() throws {
    defer { try? FileManager.default.removeItem(at: Self.work.appendingPathComponent(".workbook")) }
    // Root can write anywhere, so make the path impossible rather than read-only.
    try Data("not a folder".utf8).write(to: Self.work.appendingPathComponent(".workbook"))
    let result = try Self.workbook(["check", "--exercise", "1.1"])
    #expect(result.status == 0)
    #expect(result.stdout.contains("✔ 1.1  Adding  passed"))
    #expect(
      result.stderr
        == "workbook: progress not saved: cannot write .workbook/progress.json: .workbook is a "
        + "file, not a folder; remove or rename it (rm .workbook). The verdicts above are still "
        + "right; only the record of them is missing.\n")

    let hint = try Self.workbook(["hint", "1.1"])
    #expect(hint.status == 0)
    #expect(hint.stdout.hasPrefix("Hint 1 of 2 for 1.1 Adding:\n  Add the two numbers."))
    #expect(hint.stderr.contains("progress not saved"))
    #expect(hint.stderr.contains("The next `make hint` shows this hint again."))
  }

  @Test func theExitStatusFollowsTheGradeWhenTheProgressFileIsAFolder() throws {
    defer { try? FileManager.default.removeItem(at: Self.work.appendingPathComponent(".workbook")) }
    try FileManager.default.createDirectory(at: Self.progressURL, withIntermediateDirectories: true)
    let result = try Self.workbook(["check", "--exercise", "1.3", "--timeout", "1"])
    #expect(result.status == 1)
    #expect(result.stdout.contains("⧖ 1.3  Endless  never resumed"))
    #expect(
      result.stderr
        == "workbook: progress not saved: cannot write .workbook/progress.json: it is a folder, "
        + "not a file; remove it (rm -r .workbook/progress.json). The verdicts above are still "
        + "right; only the record of them is missing.\n")
    #expect(Processes.waitUntilGone(Self.marker).isEmpty)
  }

  @Test func aDeletedStarterGetsItsOwnVerdictAndTheOthersAreStillGraded() throws {
    let path = "Chapters/01-Hostile/04-Doubling.swift"
    try FileManager.default.removeItem(at: Self.work.appendingPathComponent(path))
    defer { try? Fixtures.sync(Self.fixture, to: Self.work) }
    // 1.2 prints 40 MB: a busy machine needs far more than 2 s for it. The limit only has
    // to stop 1.3, which never ends, so it is generous.
    let result = try Self.workbook(["check", "--json", "--timeout", "30"])
    #expect(result.status == 1)
    let report = try JSONDecoder().decode(CheckReport.self, from: Data(result.stdout.utf8))
    let exercises = report.chapters.flatMap(\.exercises)
    #expect(exercises.map(\.verdict) == [.passed, .passed, .neverResumed, .doesNotCompile])
    #expect(
      exercises.last?.details == [
        "file missing: \(path); restore it with `git checkout -- \(path)`"
      ])
    #expect(Processes.waitUntilGone(Self.marker).isEmpty)
  }

  // MARK: hostile tests

  @Test func aTestPrintingFortyMegabytesPassesWithItsOutputTruncated() throws {
    let runner = try Launched(Self.binary, ["check", "--exercise", "1.2", "--timeout", "60"])
    defer { runner.kill() }
    // The runner's peak memory while its child prints 40 MB (about 24 MB when nothing is
    // printed; keeping everything would add 40 MB of bytes and as much again as text).
    var peak = 0
    var status: Int32?
    let deadline = Date().addingTimeInterval(300)
    while status == nil, Date() < deadline {
      peak = max(peak, runner.peakMemoryKB ?? 0)
      status = runner.wait(seconds: 0.05)
    }
    #expect(status == 0)
    #expect(peak > 0)
    #expect(peak < 64 * 1024, "peak memory \(peak) kB")
    #expect(runner.stdout.contains("✔ 1.2  Chatty  passed"))
    #expect(
      runner.stdout.contains(
        "the tests printed 40.0 MB; output truncated: the runner kept the first and last "
          + "1.0 MB of each stream"))
  }

  @Test func theTimeLimitStopsATestThatNeverEndsAndEverythingItStarted() throws {
    let started = Date()
    let result = try Self.workbook(["check", "--exercise", "1.3", "--timeout", "2"])
    #expect(result.status == 1)
    #expect(result.stdout.contains("⧖ 1.3  Endless  never resumed"))
    #expect(
      result.stdout.contains("the tests were still running after 2 s, so the runner stopped them")
    )
    #expect(Processes.waitUntilGone(Self.marker).isEmpty)
    // A build (at most a relink here) plus the 2 s limit, not the test's endless wait.
    #expect(Date().timeIntervalSince(started) < 120)
  }

  // MARK: interrupts

  @Test func ctrlCWhileATestRunsStopsEverythingAndKeepsTheProgressFile() throws {
    var saved = Progress()
    saved["1.1"].verdict = .passed
    saved["1.1"].hintsShown = 1
    try ProgressStore(root: Self.work).save(saved)
    let before = try Data(contentsOf: Self.progressURL)

    let runner = try Launched(Self.binary, ["check", "--exercise", "1.3", "--timeout", "600"])
    defer { runner.kill() }
    // The test process is running once its helper is.
    try #require(Processes.waitForOne(Self.marker, also: "endless-helper", seconds: 300))
    let interrupted = Date()
    runner.signal(SIGINT)
    let status = try #require(runner.wait(seconds: 5), "still running 5 s after Ctrl-C")
    #expect(Date().timeIntervalSince(interrupted) < 3)
    #expect(status == 130)
    #expect(runner.stdout == "")
    #expect(runner.stderr.contains("workbook: interrupted"))
    #expect(Processes.waitUntilGone(Self.marker).isEmpty)
    #expect(try Data(contentsOf: Self.progressURL) == before)
    #expect(ProgressStore(root: Self.work).load { Issue.record("notice: \($0)") } == saved)
    #expect(Self.temporaryFiles().isEmpty)
  }

  @Test func ctrlCStopsWatchCleanlyWhileItGrades() throws {
    let runner = try Launched(Self.binary, ["watch", "--chapter", "1", "--timeout", "600"])
    defer { runner.kill() }
    try #require(Processes.waitForOne(Self.marker, also: "endless-helper", seconds: 300))
    runner.signal(SIGINT)
    let status = try #require(runner.wait(seconds: 5), "still running 5 s after Ctrl-C")
    #expect(status == 0)
    #expect(runner.stderr.hasSuffix("watch: stopped\n"))
    #expect(Processes.waitUntilGone(Self.marker).isEmpty)
  }

  @Test func sigtermDuringABuildStopsTheCompilerToo() throws {
    // An edit, so that there is something to compile.
    let file = Self.work.appendingPathComponent("Chapters/01-Hostile/01-Adding.swift")
    let original = try Data(contentsOf: file)
    try (original + Data("\n// edited \(UUID().uuidString)\n".utf8)).write(to: file)
    defer { try? original.write(to: file) }

    let runner = try Launched(Self.binary, ["check", "--exercise", "1.1"])
    defer { runner.kill() }
    // swift-build names the package path; the runner itself is excluded by its pid.
    try #require(
      Processes.waitForOne(Self.marker, also: "swift-build", seconds: 60)
        || Processes.waitForOne(Self.marker, also: "PackageTests", seconds: 60))
    runner.signal(SIGTERM)
    let status = try #require(runner.wait(seconds: 5), "still running 5 s after SIGTERM")
    #expect(status == 143)
    #expect(runner.stderr.contains("workbook: terminated"))
    #expect(Processes.waitUntilGone(Self.marker).isEmpty)

    // The build folder survives being stopped half-way.
    try original.write(to: file)
    let again = try Self.workbook(["check", "--exercise", "1.1"])
    #expect(again.status == 0)
  }

  // MARK: helpers

  static var binary: URL { (try? GoldenTests.binary()) ?? URL(fileURLWithPath: "/nonexistent") }

  static func workbook(_ arguments: [String]) throws -> GoldenTests.Result {
    let outcome = try ChildProcess.run(
      try GoldenTests.binary().path, arguments + ["--root", work.path],
      environment: ["NO_COLOR": "1"], in: work, timeout: 600)
    guard case .exited(let status) = outcome.termination else {
      Issue.record("workbook \(arguments) ended with \(outcome.termination)")
      return GoldenTests.Result(status: -1, stdout: outcome.stdout, stderr: outcome.stderr)
    }
    return GoldenTests.Result(
      status: status, stdout: outcome.stdout, stderr: withoutProgressLines(outcome.stderr))
  }

  static func writeProgress(_ data: Data) throws {
    try FileManager.default.createDirectory(
      at: progressURL.deletingLastPathComponent(), withIntermediateDirectories: true)
    try data.write(to: progressURL)
  }

  /// Temporary progress files left in .workbook (an interrupted save would leave one).
  static func temporaryFiles() -> [String] {
    let names =
      (try? FileManager.default.contentsOfDirectory(
        atPath: progressURL.deletingLastPathComponent().path)) ?? []
    return names.filter { $0 != "progress.json" }
  }
}

/// The `workbook` binary started in the background, for the tests that signal it.
final class Launched: @unchecked Sendable {
  let process = Process()
  let folder: URL
  /// The root's path: every process the runner starts names it.
  let marker: String

  init(_ binary: URL, _ arguments: [String], root: URL = RobustnessTests.work) throws {
    folder = try Fixtures.temporaryFolder()
    marker = root.path
    _ = FileManager.default.createFile(
      atPath: folder.appendingPathComponent("out").path, contents: nil)
    _ = FileManager.default.createFile(
      atPath: folder.appendingPathComponent("err").path, contents: nil)
    process.executableURL = binary
    process.arguments = arguments + ["--root", root.path]
    process.currentDirectoryURL = root
    var environment = ProcessInfo.processInfo.environment
    environment["NO_COLOR"] = "1"
    process.environment = environment
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = try FileHandle(forWritingTo: folder.appendingPathComponent("out"))
    process.standardError = try FileHandle(forWritingTo: folder.appendingPathComponent("err"))
    try process.run()
  }

  func signal(_ number: Int32) { Foundation.kill(process.processIdentifier, number) }

  /// The exit status, or nil if it is still running after `seconds`. (Foundation hears of
  /// the end only once every process holding the runner's descriptors has ended, so a
  /// runner that ended is also recognised, and collected, through /proc.)
  func wait(seconds: Double) -> Int32? {
    let deadline = Date().addingTimeInterval(seconds)
    let pid = process.processIdentifier
    while process.isRunning, Date() < deadline {
      var status: Int32 = 0
      if ProcessTree.hasEnded(pid), waitpid(pid, &status, WNOHANG) == pid {
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + status & 0x7f
      }
      Thread.sleep(forTimeInterval: 0.05)
    }
    return process.isRunning ? nil : process.terminationStatus
  }

  /// VmHWM from /proc: the most memory the process has held so far.
  var peakMemoryKB: Int? {
    guard
      let data = FileManager.default.contents(
        atPath: "/proc/\(process.processIdentifier)/status"),
      let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first(where: {
        $0.hasPrefix("VmHWM:")
      })
    else { return nil }
    return Int(line.split(separator: " ").dropFirst().first ?? "")
  }

  var stdout: String { read("out") }
  var stderr: String { read("err") }

  private func read(_ name: String) -> String {
    let data = (try? Data(contentsOf: folder.appendingPathComponent(name))) ?? Data()
    return String(decoding: data, as: UTF8.self)
  }

  /// Cleans up after a failed test: the runner, then whatever it left.
  func kill() {
    if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
    for line in Processes.matching(marker) {
      if let pid = Int32(line.prefix { $0 != ":" }) { Foundation.kill(pid, SIGKILL) }
    }
    _ = wait(seconds: 5)
    try? FileManager.default.removeItem(at: folder)
  }
}
