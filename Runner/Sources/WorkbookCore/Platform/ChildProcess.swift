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
  /// Announced a blocked thread (a test watchdog's `workbook-blocked:` line), then did not
  /// end within the grace period, `seconds` after it started: a main actor blocked for good
  /// never comes back; the runner killed its group instead of waiting for the time limit.
  case stoppedAfterBlocking(seconds: Double)
}

/// A finished child process and what it printed (at most ``OutputCapture/defaultLimit``
/// bytes from the start and from the end of each stream).
public struct ProcessOutcome: Sendable, Equatable {
  public var termination: Termination
  public var stdout: String
  public var stderr: String
  /// Bytes printed but not kept, on stdout and stderr together (0 when nothing was cut).
  public var omittedBytes: Int
  /// Everything printed, kept or not.
  public var totalBytes: Int

  public init(
    termination: Termination, stdout: String = "", stderr: String = "", omittedBytes: Int = 0,
    totalBytes: Int? = nil
  ) {
    self.termination = termination
    self.stdout = stdout
    self.stderr = stderr
    self.omittedBytes = omittedBytes
    self.totalBytes = totalBytes ?? (stdout.utf8.count + stderr.utf8.count)
  }

  public var succeeded: Bool { termination == .exited(0) }
}

/// Runs child processes with their output read through pipes as it comes (so a chatty
/// child never blocks on a full pipe) and kept within a budget, an optional time limit
/// after which the child and everything it started are killed, and a registry so that
/// Ctrl-C can stop every child the runner started.
public enum ChildProcess {
  private struct Registry {
    var running: Set<Int32> = []
    var interrupted = false
  }
  private static let registry = Mutex(Registry())

  /// True once ``terminateAll()`` ran: results from now on are not to be reported.
  public static var interrupted: Bool { registry.withLock { $0.interrupted } }

  /// Runs `executable` and waits for it.
  ///
  /// - Parameters:
  ///   - environment: Variables to set (or, with `nil`, remove) on top of the runner's own.
  ///   - timeout: Seconds before the process tree is killed; `nil` waits forever.
  ///   - crashGrace: Once stderr shows a crash, seconds to let the process finish its
  ///     report before its tree is killed; `nil` waits for the time limit instead.
  ///   - blockedGrace: Once stderr announces a blocked thread, seconds to let the process
  ///     recover and end before its tree is killed; `nil` waits for the time limit instead.
  ///   - outputLimit: Bytes kept from the start and from the end of each stream.
  ///   - poll: Called about five times a second with the latest stdout while waiting.
  public static func run(
    _ executable: String,
    _ arguments: [String],
    environment: [String: String?] = [:],
    in directory: URL? = nil,
    timeout: Double? = nil,
    crashGrace: Double? = nil,
    blockedGrace: Double? = nil,
    outputLimit: Int = OutputCapture.defaultLimit,
    poll: ((String) -> Void)? = nil
  ) throws(WorkbookError) -> ProcessOutcome {
    let stdout = OutputCapture(headLimit: outputLimit, tailLimit: outputLimit)
    let stderr = OutputCapture(headLimit: outputLimit, tailLimit: outputLimit)
    let outPipe = try makePipe()
    let errPipe = try makePipe()

    let process = Process()
    let finished = DispatchSemaphore(value: 0)
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle(fileDescriptor: outPipe.write, closeOnDealloc: false)
    process.standardError = FileHandle(fileDescriptor: errPipe.write, closeOnDealloc: false)
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var merged = ProcessInfo.processInfo.environment
    for (key, value) in environment { merged[key] = value }
    process.environment = merged
    if let directory { process.currentDirectoryURL = directory }
    process.terminationHandler = { _ in finished.signal() }

    // Starting and registering happen under the registry's lock, so Ctrl-C either sees
    // the child or stops it from starting.
    let launched: Result<Int32, WorkbookError> = registry.withLock { registry in
      if registry.interrupted { return .failure(.interrupted) }
      do {
        try process.run()
      } catch {
        return .failure(.failure("cannot run \(executable): \(error.localizedDescription)"))
      }
      registry.running.insert(process.processIdentifier)
      return .success(process.processIdentifier)
    }
    // The child has its own copies of the write ends; the reads end when it (and anything
    // it started) has closed them.
    close(outPipe.write)
    close(errPipe.write)
    let readers = [
      Reader.start(fd: outPipe.read, into: stdout), Reader.start(fd: errPipe.read, into: stderr),
    ]
    let pid: Int32
    switch launched {
    case .success(let value): pid = value
    case .failure(let error):
      readers.forEach { $0.stop() }
      throw error
    }

    let start = DispatchTime.now()
    func secondsSince(_ instant: DispatchTime) -> Double {
      Double(DispatchTime.now().uptimeNanoseconds - instant.uptimeNanoseconds) / 1e9
    }
    var timedOut = false
    var stoppedAfterCrash = false
    var crashSeen: DispatchTime?
    var stoppedAfterBlocking = false
    var blockedSeen: DispatchTime?
    // Foundation learns that a child ended when a descriptor the child inherited closes, so
    // a grandchild that escaped with it would delay the news until it ends too; a child
    // seen to have ended is collected here instead.
    var collected: Int32?
    func ended() -> Bool {
      guard ProcessTree.hasEnded(pid) else { return false }
      var status: Int32 = 0
      if waitpid(pid, &status, WNOHANG) == pid {
        collected = status
      } else {
        finished.wait()  // Foundation collected it first; its handler follows at once.
      }
      return true
    }
    while true {
      if finished.wait(timeout: .now() + 0.2) == .success || ended() { break }
      poll?(stdout.recent())
      if crashSeen == nil, crashGrace != nil, stderr.sawCrash { crashSeen = .now() }
      if blockedSeen == nil, blockedGrace != nil, stderr.sawBlocked { blockedSeen = .now() }
      if let crashSeen, let crashGrace, secondsSince(crashSeen) >= crashGrace {
        stoppedAfterCrash = true
      } else if crashSeen == nil, let blockedSeen, let blockedGrace,
        secondsSince(blockedSeen) >= blockedGrace
      {
        stoppedAfterBlocking = true
      } else if let timeout, secondsSince(start) >= timeout {
        timedOut = true
      } else {
        continue
      }
      ProcessTree.stop(pid)
      while finished.wait(timeout: .now() + 0.1) == .timedOut, !ended() {}
      break
    }
    // Anything the child left running in its group goes too (the group outlives its
    // leader only while it has members, so this cannot reach an unrelated process).
    kill(-pid, SIGKILL)
    registry.withLock { _ = $0.running.remove(pid) }
    // Normally the pipes close with the child; a grandchild that escaped the group and
    // still holds them is not waited for.
    let drained = Date().addingTimeInterval(2)
    for reader in readers { reader.finish(before: drained) }
    if interrupted { throw .interrupted }

    let termination: Termination
    if stoppedAfterCrash {
      termination = .stoppedAfterCrash
    } else if stoppedAfterBlocking {
      termination = .stoppedAfterBlocking(seconds: (secondsSince(start) * 10).rounded() / 10)
    } else if timedOut {
      termination = .timedOut(seconds: timeout ?? 0)
    } else if let status = collected {
      let signal = status & 0x7f
      termination = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    } else if process.terminationReason == .uncaughtSignal {
      termination = .signalled(process.terminationStatus)
    } else {
      termination = .exited(process.terminationStatus)
    }
    return ProcessOutcome(
      termination: termination, stdout: stdout.text, stderr: stderr.text,
      omittedBytes: stdout.omittedBytes + stderr.omittedBytes,
      totalBytes: stdout.totalBytes + stderr.totalBytes)
  }

  /// A pipe whose ends are not inherited by other children started meanwhile.
  private static func makePipe() throws(WorkbookError) -> (read: Int32, write: Int32) {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else {
      throw .failure("cannot create a pipe: \(String(cString: strerror(errno)))")
    }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return (fds[0], fds[1])
  }

  /// Reads one pipe on a thread of its own until end of file or until told to stop.
  final class Reader: @unchecked Sendable {
    private let fd: Int32
    private let capture: OutputCapture
    private let done = DispatchSemaphore(value: 0)
    private let stopping = Mutex(false)

    private init(fd: Int32, capture: OutputCapture) {
      self.fd = fd
      self.capture = capture
    }

    static func start(fd: Int32, into capture: OutputCapture) -> Reader {
      let reader = Reader(fd: fd, capture: capture)
      let thread = Thread { reader.loop() }
      thread.name = "workbook-pipe-reader"
      thread.start()
      return reader
    }

    private func loop() {
      defer {
        close(fd)
        done.signal()
      }
      var buffer = [UInt8](repeating: 0, count: 64 * 1024)
      while !stopping.withLock({ $0 }) {
        var request = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&request, 1, 100)
        if ready < 0, errno == EINTR { continue }
        if ready <= 0 { continue }
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR || errno == EAGAIN { continue }
        if count <= 0 { return }
        buffer.withUnsafeBytes { capture.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
      }
    }

    /// Waits for end of file until `deadline`, then stops reading.
    func finish(before deadline: Date) {
      let remaining = max(0, deadline.timeIntervalSinceNow)
      if done.wait(timeout: .now() + remaining) == .success { return }
      stop()
    }

    func stop() {
      stopping.withLock { $0 = true }
      done.wait()
    }
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

  /// Stops every child still running and everything they started (used when the learner
  /// presses Ctrl-C): from now on no child starts and results are not reported.
  public static func terminateAll() {
    let running = registry.withLock { registry in
      registry.interrupted = true
      return registry.running
    }
    ProcessTree.stopDescendants(of: getpid())
    for pid in running { kill(-pid, SIGKILL) }
  }

  static func readText(_ url: URL) -> String {
    guard let data = try? Data(contentsOf: url) else { return "" }
    return String(decoding: data, as: UTF8.self)
  }
}
