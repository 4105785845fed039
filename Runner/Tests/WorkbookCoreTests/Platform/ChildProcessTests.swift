import Foundation
import Testing

@testable import WorkbookCore

@Suite(.offThePool, .timeLimit(.minutes(1))) struct ChildProcessTests {
  @Test func stopsAProcessThatHangsAfterPrintingACrash() throws {
    let started = Date()
    let outcome = try ChildProcess.run(
      "/bin/sh", ["-c", "echo 'Fatal error: boom' >&2; sleep 60"], timeout: 30, crashGrace: 1)
    #expect(outcome.termination == .stoppedAfterCrash)
    #expect(outcome.stderr.contains("Fatal error: boom"))
    #expect(Date().timeIntervalSince(started) < 20)
  }

  @Test func findsACrashMarkerSplitAcrossTwoReads() {
    let capture = OutputCapture()
    capture.append(Array("test output… Fatal er".utf8))
    let before = capture.sawCrash
    #expect(!before)
    capture.append(Array("ror: boom\n".utf8))
    let after = capture.sawCrash
    #expect(after)
  }

  @Test func stopsAProcessThatStaysStuckAfterAnnouncingABlockedThread() throws {
    let started = Date()
    let outcome = try ChildProcess.run(
      "/bin/sh",
      ["-c", "printf 'workbook-blocked: t\\tBlocked the main actor: x\\n' >&2; sleep 60"],
      timeout: 30, crashGrace: 1, blockedGrace: 1)
    guard case .stoppedAfterBlocking(let seconds) = outcome.termination else {
      Issue.record("expected the run stopped after its announcement, got \(outcome.termination)")
      return
    }
    #expect(seconds >= 1 && seconds < 20)
    #expect(Date().timeIntervalSince(started) < 20)
  }

  @Test func findsABlockedAnnouncementSplitAcrossTwoReads() {
    let capture = OutputCapture()
    capture.append(Array("test output… workbook-blo".utf8))
    let before = capture.sawBlocked
    #expect(!before)
    capture.append(Array("cked: t\tBlocked the main actor: x\n".utf8))
    let after = capture.sawBlocked
    #expect(after)
  }

  @Test func letsAProcessWithoutACrashRunToTheLimit() throws {
    let outcome = try ChildProcess.run(
      "/bin/sh", ["-c", "echo 'all fine' >&2; sleep 60"], timeout: 2, crashGrace: 1)
    #expect(outcome.termination == .timedOut(seconds: 2))
    #expect(outcome.stderr == "all fine\n")
  }

  @Test func keepsTheStartAndTheEndOfALongStream() {
    let capture = OutputCapture(headLimit: 4, tailLimit: 3)
    capture.append(Array("abcdefgh".utf8))
    capture.append(Array("ijklmnop".utf8))
    #expect(capture.totalBytes == 16)
    #expect(capture.omittedBytes == 9)
    #expect(capture.text == "abcd\n[… output truncated: 9 bytes left out …]\nnop")
    let short = OutputCapture(headLimit: 4, tailLimit: 3)
    short.append(Array("abcdefg".utf8))
    #expect(short.omittedBytes == 0)
    #expect(short.text == "abcdefg")
  }

  /// 20 MB on each stream: no deadlock on full pipes, and only the budget is kept.
  @Test func readsMegabytesWithoutBlockingAndKeepsOnlyTheBudget() throws {
    let twenty = 20_000_000
    let started = Date()
    let outcome = try ChildProcess.run(
      "/bin/sh",
      [
        "-c", "head -c \(twenty) /dev/zero | tr '\\0' x; head -c \(twenty) /dev/zero >&2; echo end",
      ],
      timeout: 60, outputLimit: 1 << 20)
    #expect(outcome.termination == .exited(0))
    #expect(outcome.totalBytes == 2 * twenty + 4)
    #expect(outcome.omittedBytes == 2 * twenty + 4 - 4 * (1 << 20))
    // Booleans, so that a failure does not print two megabytes.
    let kept = outcome.stdout.utf8.count
    let start = outcome.stdout.hasPrefix("xxxx")
    let end = outcome.stdout.hasSuffix("xxxxend\n")
    let said = outcome.stdout.contains("\n[… output truncated: \(twenty + 4 - 2 * (1 << 20)) bytes")
    #expect(kept < 2 * (1 << 20) + 100)
    #expect(start)
    #expect(end)
    #expect(said)
    #expect(Date().timeIntervalSince(started) < 30)
  }

  /// A child that starts a grandchild in a process group of its own (as `swift build`
  /// does with its compiler jobs): the time limit stops both.
  @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/stat")))
  func theTimeLimitStopsGrandchildrenInOtherProcessGroups() throws {
    let marker = "workbook-grandchild-\(UUID().uuidString)"
    let outcome = try ChildProcess.run(
      "/bin/sh", ["-c", "setsid sh -c 'sleep 120; : \(marker)' & sleep 120"], timeout: 1)
    #expect(outcome.termination == .timedOut(seconds: 1))
    #expect(Processes.waitUntilGone(marker).isEmpty)
  }
}

extension ChildProcessTests {
  /// A grandchild that escapes (a new session, its parent gone) and keeps the output pipes
  /// open does not hold up the result.
  @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/stat")))
  func anEscapedGrandchildHoldingThePipesDoesNotHoldUpTheResult() throws {
    let marker = "workbook-escaped-\(UUID().uuidString)"
    defer {
      for line in Processes.matching(marker) {
        if let pid = Int32(line.prefix { $0 != ":" }) { kill(pid, SIGKILL) }
      }
    }
    let started = Date()
    let outcome = try ChildProcess.run(
      "/bin/sh", ["-c", "setsid sh -c 'sleep 30; : \(marker)' & echo started"], timeout: 60)
    #expect(outcome.termination == .exited(0))
    #expect(outcome.stdout == "started\n")
    #expect(Date().timeIntervalSince(started) < 10)
  }
}

/// Looking for processes by a marker in their command lines (Linux /proc).
enum Processes {
  /// Live processes (not zombies) whose command line contains `marker`, except this one.
  static func matching(_ marker: String) -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return names.compactMap { name -> String? in
      guard let pid = Int32(name), pid != getpid(),
        let raw = FileManager.default.contents(atPath: "/proc/\(name)/cmdline"), !raw.isEmpty
      else { return nil }
      let arguments = String(decoding: raw.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
      guard arguments.contains(marker) else { return nil }
      if let stat = FileManager.default.contents(atPath: "/proc/\(name)/stat"),
        let close = String(decoding: stat, as: UTF8.self).lastIndex(of: ")")
      {
        let text = String(decoding: stat, as: UTF8.self)
        let state = text[text.index(after: close)...].split(separator: " ").first
        if state == "Z" { return nil }
      }
      return "\(pid): \(arguments)"
    }
  }

  /// Waits up to `seconds` (killed processes take a moment to go) and returns what is
  /// still running.
  static func waitUntilGone(_ marker: String, seconds: Double = 3) -> [String] {
    let deadline = Date().addingTimeInterval(seconds)
    var left = matching(marker)
    while !left.isEmpty, Date() < deadline {
      Thread.sleep(forTimeInterval: 0.1)
      left = matching(marker)
    }
    return left
  }

  /// Waits up to `seconds` for a process matching `marker` (and `also`, when given).
  static func waitForOne(_ marker: String, also: String? = nil, seconds: Double) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if matching(marker).contains(where: { also == nil || $0.contains(also!) }) { return true }
      Thread.sleep(forTimeInterval: 0.1)
    }
    return false
  }
}
