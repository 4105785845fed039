import Dispatch
import Foundation
import Synchronization

/// How a child process ended.
public enum Termination: Sendable, Equatable {
  case exited(Int32)
  case signalled(Int32)
  /// Still running at the time limit; the runner killed its process group.
  case timedOut(seconds: Double)
  /// Printed a crash, then did not end within the grace period (the runtime's crash
  /// reporter can hang when two threads crash at once); the runner killed its group.
  case stoppedAfterCrash
}

/// A finished child process and everything it printed.
public struct ProcessOutcome: Sendable, Equatable {
  public var termination: Termination
  public var stdout: String
  public var stderr: String

  public init(termination: Termination, stdout: String = "", stderr: String = "") {
    self.termination = termination
    self.stdout = stdout
    self.stderr = stderr
  }

  public var succeeded: Bool { termination == .exited(0) }
}

/// Runs child processes with their output in files (no pipes to fill up), an optional time
/// limit after which the whole process group is killed, and a registry so that Ctrl-C can
/// stop every child the runner started.
public enum ChildProcess {
  private static let running = Mutex<Set<Int32>>([])
  private static let interruption = Mutex(false)

  /// True once ``terminateAll(grace:)`` ran: results from now on are not to be reported.
  public static var interrupted: Bool { interruption.withLock { $0 } }

  /// Runs `executable` and waits for it.
  ///
  /// - Parameters:
  ///   - environment: Variables to set (or, with `nil`, remove) on top of the runner's own.
  ///   - timeout: Seconds before the process group is killed; `nil` waits forever.
  ///   - crashGrace: Once stderr shows a crash, seconds to let the process finish its
  ///     report before its group is killed; `nil` waits for the time limit instead.
  ///   - poll: Called about five times a second with the stdout file while waiting.
  public static func run(
    _ executable: String,
    _ arguments: [String],
    environment: [String: String?] = [:],
    in directory: URL? = nil,
    timeout: Double? = nil,
    crashGrace: Double? = nil,
    poll: ((URL) -> Void)? = nil
  ) throws(WorkbookError) -> ProcessOutcome {
    let scratch = FileManager.default.temporaryDirectory
      .appendingPathComponent("workbook-\(getpid())-\(UUID().uuidString)")
    let stdoutURL = scratch.appendingPathComponent("stdout")
    let stderrURL = scratch.appendingPathComponent("stderr")
    defer { try? FileManager.default.removeItem(at: scratch) }

    let process = Process()
    let finished = DispatchSemaphore(value: 0)
    do {
      try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
      _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
      _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
      process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
      process.standardError = try FileHandle(forWritingTo: stderrURL)
    } catch {
      throw .failure("cannot create temporary files in \(scratch.path): \(error)")
    }
    process.standardInput = FileHandle.nullDevice
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var merged = ProcessInfo.processInfo.environment
    for (key, value) in environment { merged[key] = value }
    process.environment = merged
    if let directory { process.currentDirectoryURL = directory }
    process.terminationHandler = { _ in finished.signal() }

    if interrupted { throw .interrupted }
    do {
      try process.run()
    } catch {
      throw .failure("cannot run \(executable): \(error.localizedDescription)")
    }
    let pid = process.processIdentifier
    running.withLock { _ = $0.insert(pid) }

    let start = DispatchTime.now()
    func secondsSince(_ instant: DispatchTime) -> Double {
      Double(DispatchTime.now().uptimeNanoseconds - instant.uptimeNanoseconds) / 1e9
    }
    var timedOut = false
    var stoppedAfterCrash = false
    var crashWatch = crashGrace.map { _ in CrashWatch(url: stderrURL) }
    var crashSeen: DispatchTime?
    while true {
      if finished.wait(timeout: .now() + 0.2) == .success { break }
      poll?(stdoutURL)
      if crashSeen == nil, crashWatch?.sawCrash() == true { crashSeen = .now() }
      if let crashSeen, let crashGrace, secondsSince(crashSeen) >= crashGrace {
        stoppedAfterCrash = true
      } else if let timeout, secondsSince(start) >= timeout {
        timedOut = true
      } else {
        continue
      }
      killGroup(pid)
      finished.wait()
      break
    }
    running.withLock { _ = $0.remove(pid) }
    if interrupted { throw .interrupted }
    try? (process.standardOutput as? FileHandle)?.close()
    try? (process.standardError as? FileHandle)?.close()

    let termination: Termination
    if stoppedAfterCrash {
      termination = .stoppedAfterCrash
    } else if timedOut {
      termination = .timedOut(seconds: timeout ?? 0)
    } else if process.terminationReason == .uncaughtSignal {
      termination = .signalled(process.terminationStatus)
    } else {
      termination = .exited(process.terminationStatus)
    }
    return ProcessOutcome(
      termination: termination,
      stdout: readText(stdoutURL),
      stderr: readText(stderrURL))
  }

  /// Finds `name` on `PATH`, the way a shell would.
  public static func which(_ name: String) -> String? {
    if name.contains("/") { return name }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for folder in path.split(separator: ":") {
      let candidate = "\(folder)/\(name)"
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
  }

  /// Stops every child still running (used when the learner presses Ctrl-C): first an
  /// interrupt, as the terminal would have sent, so `swift build` can stop its compiler
  /// jobs; whatever is left after `grace` seconds is killed.
  public static func terminateAll(grace: Double = 2) {
    interruption.withLock { $0 = true }
    for pid in running.withLock({ $0 }) {
      kill(-pid, SIGINT)
      kill(pid, SIGINT)
    }
    let deadline = Date().addingTimeInterval(grace)
    while Date() < deadline, !running.withLock({ $0.isEmpty }) {
      Thread.sleep(forTimeInterval: 0.05)
    }
    for pid in running.withLock({ $0 }) { killGroup(pid) }
  }

  /// Foundation starts each child in a process group of its own (checked on Linux), so
  /// killing the group also stops anything the child started.
  private static func killGroup(_ pid: Int32) {
    kill(-pid, SIGKILL)
    kill(pid, SIGKILL)
  }

  /// Reads a growing stderr file a little at a time, looking for the first sign of a crash.
  struct CrashWatch {
    static let markers = ["Fatal error", "*** Program crashed", "*** Signal "]
    let url: URL
    private var offset: UInt64 = 0
    /// The end of what was read last, so a marker split across two reads is still found.
    private var tail = ""

    init(url: URL) { self.url = url }

    mutating func sawCrash() -> Bool {
      guard let handle = try? FileHandle(forReadingFrom: url) else { return false }
      defer { try? handle.close() }
      guard (try? handle.seek(toOffset: offset)) != nil,
        let data = try? handle.readToEnd(), !data.isEmpty
      else { return false }
      offset += UInt64(data.count)
      let text = tail + String(decoding: data, as: UTF8.self)
      tail = String(text.suffix(32))
      return Self.markers.contains { text.contains($0) }
    }
  }

  static func readText(_ url: URL) -> String {
    guard let data = try? Data(contentsOf: url) else { return "" }
    return String(decoding: data, as: UTF8.self)
  }
}
