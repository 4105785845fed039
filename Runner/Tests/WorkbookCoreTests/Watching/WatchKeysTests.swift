import Foundation
import Synchronization
import Testing

@testable import WorkbookCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `watch` at a terminal takes single keys while it waits: driven through a pseudo-terminal,
/// keys in, screen out, on a copy of the MiniWorkbook fixture.
@Suite(
  .serialized, .offThePool, .timeLimit(.minutes(10)),
  .enabled(if: FileManager.default.fileExists(atPath: "/dev/ptmx"), "needs Linux's /dev/ptmx"))
struct WatchKeysTests {
  static let fixture = Fixtures.folder.appendingPathComponent("MiniWorkbook")
  static let work = Fixtures.folder.deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent(".build/watchkeys/MiniWorkbook")

  @Test func keysListHintMoveOnAndQuit() throws {
    try Fixtures.sync(Self.fixture, to: Self.work)
    try? FileManager.default.removeItem(at: Self.work.appendingPathComponent(".workbook"))
    let terminal = try PseudoTerminal()
    let process = Process()
    process.executableURL = try GoldenTests.binary()
    process.arguments = ["watch", "--chapter", "1", "--root", Self.work.path]
    process.currentDirectoryURL = Self.work
    var environment = ProcessInfo.processInfo.environment
    environment["NO_COLOR"] = "1"
    process.environment = environment
    process.standardInput = terminal.follower
    process.standardOutput = terminal.follower
    process.standardError = terminal.follower
    try process.run()
    defer { if process.isRunning { process.terminate() } }

    // The first grade builds the fixture: minutes on a cold machine. 1.1 passes as shipped,
    // so the keys act on 1.2, the first exercise not passed.
    try #require(
      terminal.waitFor("keys: h hint 1.2", seconds: 300),
      "no key line: \(terminal.screen.suffix(600))")
    terminal.type("l")
    #expect(terminal.waitFor("→ 1.2  Doubling: failed", seconds: 10), "\(terminal.screen)")
    terminal.type("h")
    #expect(terminal.waitFor("Doubling is multiplying by two.", seconds: 10), "\(terminal.screen)")
    terminal.type("n")
    #expect(
      terminal.waitFor("1.2 Doubling has not passed yet", seconds: 10), "\(terminal.screen)")
    terminal.type("q")
    #expect(terminal.waitFor("watch: stopped", seconds: 10), "\(terminal.screen)")
    let deadline = Date().addingTimeInterval(10)
    while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
    #expect(!process.isRunning, "watch still running after q")
    if !process.isRunning { #expect(process.terminationStatus == 0) }
    // The terminal echoes again once watch has stopped.
    #expect(terminal.echoes)
    // The hint was remembered, as make hint remembers it.
    let progress = ProgressStore(root: Self.work).load { _ in }
    #expect(progress["1.2"].hintsShown == 1)
  }
}

/// A pseudo-terminal: the runner gets the follower side as its terminal; the test types on
/// the leader side and reads what the runner wrote.
private final class PseudoTerminal: Sendable {
  let follower: FileHandle
  private let leader: Int32
  private let output = Screen()

  private final class Screen: Sendable {
    let text = Mutex("")
  }

  init() throws {
    // /dev/ptmx, unlocked, and its number (Linux's ioctls: TIOCSPTLCK, TIOCGPTN).
    leader = open("/dev/ptmx", O_RDWR | O_NOCTTY)
    var unlock: Int32 = 0
    var number: UInt32 = 0
    guard leader >= 0, ioctl(leader, 0x4004_5431, &unlock) == 0,
      ioctl(leader, 0x8004_5430, &number) == 0
    else { throw CocoaError(.fileNoSuchFile) }
    let followerDescriptor = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
    guard followerDescriptor >= 0 else { throw CocoaError(.fileNoSuchFile) }
    follower = FileHandle(fileDescriptor: followerDescriptor, closeOnDealloc: true)
    let leader = leader
    let output = output
    Thread {
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        let count = read(leader, &buffer, buffer.count)
        if count <= 0 { return }
        let text = String(decoding: buffer[..<count], as: UTF8.self)
        output.text.withLock { $0 += text }
      }
    }.start()
  }

  /// Everything the runner wrote so far.
  var screen: String { output.text.withLock { $0 } }

  func type(_ text: String) {
    _ = text.utf8CString.withUnsafeBufferPointer { write(leader, $0.baseAddress, text.utf8.count) }
  }

  /// Waits until the screen shows `text`, for at most `seconds`.
  func waitFor(_ text: String, seconds: Double) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if screen.contains(text) { return true }
      Thread.sleep(forTimeInterval: 0.05)
    }
    return screen.contains(text)
  }

  /// Whether the terminal echoes typed keys (its settings put back).
  var echoes: Bool {
    var settings = termios()
    guard tcgetattr(follower.fileDescriptor, &settings) == 0 else { return false }
    return settings.c_lflag & tcflag_t(ECHO) != 0
  }
}
