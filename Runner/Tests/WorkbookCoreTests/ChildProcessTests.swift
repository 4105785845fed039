import Foundation
import Testing

@testable import WorkbookCore

@Suite struct ChildProcessTests {
  @Test func stopsAProcessThatHangsAfterPrintingACrash() throws {
    let started = Date()
    let outcome = try ChildProcess.run(
      "/bin/sh", ["-c", "echo 'Fatal error: boom' >&2; sleep 60"], timeout: 30, crashGrace: 1)
    #expect(outcome.termination == .stoppedAfterCrash)
    #expect(outcome.stderr.contains("Fatal error: boom"))
    #expect(Date().timeIntervalSince(started) < 20)
  }

  @Test func findsACrashMarkerSplitAcrossTwoReads() throws {
    let folder = try Fixtures.temporaryFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("stderr")
    try Data("test output… Fatal er".utf8).write(to: file)
    var watch = ChildProcess.CrashWatch(url: file)
    let before = watch.sawCrash()
    #expect(!before)
    let handle = try FileHandle(forWritingTo: file)
    try handle.seekToEnd()
    try handle.write(contentsOf: Data("ror: boom\n".utf8))
    try handle.close()
    let after = watch.sawCrash()
    #expect(after)
  }

  @Test func letsAProcessWithoutACrashRunToTheLimit() throws {
    let outcome = try ChildProcess.run(
      "/bin/sh", ["-c", "echo 'all fine' >&2; sleep 60"], timeout: 2, crashGrace: 1)
    #expect(outcome.termination == .timedOut(seconds: 2))
  }
}
