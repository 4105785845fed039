import Dispatch
import Foundation
import Testing
import WorkbookTesting

@testable import Callbacks

/// A real `Process` that notes a termination handler installed after the child exited.
///
/// swift-corelibs-foundation reads the handler once, right after reaping the child, and never
/// again: a handler set later is never called. Noting it lets a test say so at once, in
/// words about the order, instead of waiting for a caller that can never be answered.
class WatchedProcess: Process, @unchecked Sendable {
  /// Set when a handler is installed after Foundation looked for one and found none.
  let handlerSetTooLate: Locked<Bool>
  private let foundNoHandler = Locked(false)
  fileprivate let handlerLookedUp = DispatchSemaphore(value: 0)

  init(handlerSetTooLate: Locked<Bool>) {
    self.handlerSetTooLate = handlerSetTooLate
    super.init()
  }

  override var terminationHandler: (@Sendable (Process) -> Void)? {
    get {
      let handler = super.terminationHandler
      if !super.isRunning && processIdentifier != 0 {
        if handler == nil { foundNoHandler.withLock { $0 = true } }
        handlerLookedUp.signal()
      }
      return handler
    }
    set {
      super.terminationHandler = newValue
      if newValue != nil && foundNoHandler.value { handlerSetTooLate.withLock { $0 = true } }
    }
  }
}

/// A real `Process` whose `run()` returns only after the child has exited and Foundation
/// has looked for a termination handler.
///
/// That is what happens, by luck of timing, when a short program beats `run()`; this makes
/// it happen every time. On Linux, a handler installed after `run()` returns is then never
/// called. (Apple documents that a handler set after the process finished still runs, so on
/// macOS the mistake may go unnoticed.) Use it only with programs that exit at once.
final class FinishesBeforeRunReturns: WatchedProcess, @unchecked Sendable {
  override func run() throws {
    try super.run()
    let deadline = Date.now.addingTimeInterval(1)
    while isRunning && Date.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
    _ = handlerLookedUp.wait(timeout: .now() + .milliseconds(500))
  }
}

/// A real `Process` that exits just after `isRunning` has said it runs.
///
/// Asked while the child runs, `isRunning` answers "yes" only once the child has exited and
/// Foundation has looked for a termination handler: a "still running? then set the handler"
/// check meets, every time, the end that a short program can bring in the instant between
/// the two steps. Only the thread that called `run()` is kept waiting: Foundation asks
/// too, on a thread of its own, before it reaps the child. Use it only with programs that
/// exit at once.
final class ExitsRightAfterIsRunning: WatchedProcess, @unchecked Sendable {
  private let starter = Locked<pthread_t?>(nil)

  override func run() throws {
    starter.withLock { $0 = pthread_self() }
    try super.run()
  }

  override var isRunning: Bool {
    guard super.isRunning else { return false }
    guard let starter = starter.value, pthread_equal(starter, pthread_self()) != 0 else {
      return true
    }
    let deadline = Date.now.addingTimeInterval(1)
    while super.isRunning && Date.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
    _ = handlerLookedUp.wait(timeout: .now() + .milliseconds(500))
    return true
  }
}

/// A `ProcessRunner` whose processes report a termination handler installed too late, and
/// are kept, so a test can look at their pipes afterwards.
struct WatchedRunner: Sendable {
  let runner: ProcessRunner
  /// Whether a termination handler was installed after its child had exited.
  let handlerSetTooLate: Locked<Bool>
  /// Every process the runner made, in order.
  let made: Locked<[Process]>

  init(_ timing: RunningProcessesTests.Timing = .asUsual) {
    let handlerSetTooLate = Locked(false)
    let made = Locked<[Process]>([])
    self.handlerSetTooLate = handlerSetTooLate
    self.made = made
    runner = ProcessRunner(makeProcess: {
      let process =
        switch timing {
        case .asUsual: WatchedProcess(handlerSetTooLate: handlerSetTooLate)
        case .exitsBeforeRunReturns: FinishesBeforeRunReturns(handlerSetTooLate: handlerSetTooLate)
        case .exitsRightAfterIsRunning:
          ExitsRightAfterIsRunning(handlerSetTooLate: handlerSetTooLate)
        }
      made.withLock { $0.append(process) }
      return process
    })
  }
}

/// The contract of `ProcessRunner.run(_:arguments:)`: each path, what the caller sees, and the
/// test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | output | pipes, handler | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | exits 0 (as usual, before `run()` returns, or right after `isRunning` said it runs) | code 0, `.exit`: `success`, `trueAndFalse` | all of stdout and stderr, apart: `success` | the handler installed before `run()`: `success` (`exitsBeforeRunReturns`, `exitsRightAfterIsRunning`) | — |
/// | writes a character in two writes, its bytes apart; writes bytes that are not UTF-8 | — | the character whole: `characterSplitBetweenWrites`; the rest kept, each bad byte U+FFFD: `bytesThatAreNotUTF8` | — | — |
/// | exits non-zero | its code: `failure`, `trueAndFalse` | what it wrote: `failure` | — | — |
/// | killed by a signal | the signal, `.uncaughtSignal`: `killedBySignal` | — | — | — |
/// | cannot be started | `run()`'s error: `launchFailure` | — | the pipes' write ends closed, so every read started for them ends: `launchFailure` | throws at once, no hang: `launchFailure` |
/// | output larger than a pipe | — | whole, on both streams: `largeOutput` | read while it runs: `largeOutput` | — |
/// | a program that runs 1.5 s (its output open, or closed at once) | code 0: `suspendsWhileRunning` | — | — | suspends: no step holds its thread (reading, or waiting for the exit after the pipes ended), no polling: `suspendsWhileRunning` |
/// | a program that runs ≥ 4 s | its output: `holdsNoPoolThreadWhileRunning` | — | — | holds no thread of the pool, in any task: `holdsNoPoolThreadWhileRunning` |
/// | one runner, programs one after another and at once | each its own status: `runningTwice` | — | — | — |
/// | `run()` and `waitUntilExit()` on a thread of the answer's own | — not tested: it holds no thread of Swift's pool, and suspends the caller; it costs a thread per running program, like the reads | | | |
/// | the pipes read by blocking reads on a global Dispatch queue, not on threads of their own | — not tested: it works, since libdispatch adds a worker when one blocks, and holds no thread of Swift's pool (the pool check passes); what it costs, a Dispatch worker held per running program up to libdispatch's cap, shows only with hundreds of programs at once | | | |
/// | cancelled (before, during, after) | — run() promises nothing for a cancelled task: the program runs to its end | | | |
/// | output still in the pipes when the program ends, read by readability handlers | — a run that returns at the termination handler without waiting for each pipe's end loses what the handlers had not read yet; whether any was left depends on when the handlers ran, which no test can steer (not caught) | | | |
/// | the waiter checks "ended already?" and stores its continuation under two separate locks | — not caught: the program must end in the nanoseconds between the two steps, which no test can steer | | | |
@Suite("1.7 A real Linux API")
struct RunningProcessesTests {
  /// How the runner's processes behave, so each test can try the awkward timing too.
  enum Timing: CustomStringConvertible, CaseIterable {
    /// A plain `Process`.
    case asUsual
    /// The child exits before `run()` returns.
    case exitsBeforeRunReturns
    /// The child exits right after `isRunning` has said it runs.
    case exitsRightAfterIsRunning

    var runner: WatchedRunner { WatchedRunner(self) }

    var description: String {
      switch self {
      case .asUsual: "as usual"
      case .exitsBeforeRunReturns: "exits before run() returns"
      case .exitsRightAfterIsRunning: "exits right after isRunning says it runs"
      }
    }
  }

  static let shell = URL(fileURLWithPath: "/bin/sh")

  static let resumeHint =
    "the continuation is not resumed when the program exits (resume it in the "
    + "terminationHandler), or reading a pipe never reaches its end (a readabilityHandler "
    + "waiting for its empty read at end of file may wait for ever: on Linux, Foundation "
    + "does not always make that last call for a child process's pipe)"

  /// Runs `executable` with the learner's `run(_:arguments:)`, within a deadline.
  ///
  /// A termination handler installed after `run()` is reported as soon as the child has
  /// exited without one, in words about the order, rather than as a caller that never
  /// resumes.
  func run(
    _ watched: WatchedRunner, _ executable: URL, _ arguments: [String] = [],
    hint: String = Self.resumeHint,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Callbacks.ExitStatus {
    var command = ([executable.path] + arguments).joined(separator: " ")
    if command.count > 40 { command = command.prefix(40) + "…" }
    let finished = Locked(false)
    let runner = watched.runner
    let work = Task {
      defer { finished.withLock { $0 = true } }
      return try await runner.run(executable, arguments: arguments)
    }
    _ = await eventually(within: .seconds(2)) {
      finished.value || watched.handlerSetTooLate.value
    }
    if watched.handlerSetTooLate.value && !finished.value {
      Issue.record(
        """
        run(\(command)) set the terminationHandler after calling process.run(): the program \
        had already exited, Foundation had found no handler, and it never calls one set \
        later, so the caller would wait forever. Store or subscribe before you start: set \
        terminationHandler, then call run()
        """,
        sourceLocation: sourceLocation)
      throw HandlerSetTooLate()
    }
    return try await withDeadline(
      .seconds(2), "run(\(command))", hint: hint, sourceLocation: sourceLocation
    ) {
      try await work.value
    }
  }

  struct HandlerSetTooLate: Error {}

  @Test("A program that succeeds reports exit code 0 and its output", arguments: Timing.allCases)
  func success(timing: Timing) async throws {
    let status = try await run(
      timing.runner, URL(fileURLWithPath: "/bin/echo"), ["hello,", "world"])

    #expect(status.code == 0, "code must be the program's terminationStatus")
    #expect(status.reason == .exit, "reason must be the program's terminationReason")
    #expect(status.output == "hello, world\n", "output must hold everything it wrote to stdout")
    #expect(
      status.errorOutput == "", "it wrote nothing to standard error, so errorOutput must be empty")
    #expect(status.succeeded)
  }

  /// `run(_:_:_:)` of a program that exits with a failing code: a thrown error is the
  /// mistake this names (a failing program still ran).
  func runFailing(
    _ watched: WatchedRunner, _ executable: URL, _ arguments: [String] = [], code: Int32,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Callbacks.ExitStatus? {
    do {
      return try await run(watched, executable, arguments, sourceLocation: sourceLocation)
    } catch let error where !(error is DeadlineExceeded) && !(error is HandlerSetTooLate) {
      Issue.record(
        """
        run(_:arguments:) threw \(error) for a program that exited with code \(code): a \
        program that fails still ran, so its exit code and what it wrote are the result \
        (ExitStatus says it did not succeed); run throws only when the program cannot be \
        started at all
        """,
        sourceLocation: sourceLocation)
      return nil
    }
  }

  @Test("A program that fails reports its exit code and what it wrote", arguments: Timing.allCases)
  func failure(timing: Timing) async throws {
    guard
      let status = try await runFailing(
        timing.runner, Self.shell, ["-c", "echo partial; echo 'disk full' >&2; exit 3"], code: 3)
    else { return }

    #expect(status.code == 3, "code must be the program's terminationStatus")
    #expect(status.reason == .exit, "reason must be the program's terminationReason")
    #expect(
      status.output == "partial\n",
      Comment(
        rawValue: status.output.contains("disk full")
          ? "output holds what the program wrote to standard error too (as 2>&1 would): "
            + "standard error has a pipe of its own, read into errorOutput"
          : "output must hold everything it wrote to stdout"))
    #expect(
      status.errorOutput == "disk full\n",
      "errorOutput must hold what the program wrote to standard error, read from its own pipe")
    #expect(!status.succeeded)
  }

  @Test(
    "/bin/true and /bin/false report success and failure",
    arguments: Timing.allCases, ["/bin/true", "/bin/false"])
  func trueAndFalse(timing: Timing, program: String) async throws {
    let expectedCode: Int32 = program == "/bin/true" ? 0 : 1
    guard
      let status = try await runFailing(
        timing.runner, URL(fileURLWithPath: program), code: expectedCode)
    else { return }

    #expect(status.code == expectedCode, "code must be the program's terminationStatus")
    #expect(status.succeeded == (expectedCode == 0))
    #expect(status.output.isEmpty, "\(program) writes nothing, so output must be empty")
  }

  @Test(
    "run() suspends while the program runs, leaving its thread free",
    arguments: ["sleep 1.5", "exec >&- 2>&-; sleep 1.5"])
  func suspendsWhileRunning(script: String) async throws {
    let executor = OneThreadExecutor()
    let runner = WatchedRunner().runner

    let status = try await withDeadline(
      .seconds(5), "run(/bin/sh -c \(script))", hint: Self.resumeHint, on: executor
    ) {
      try await runner.run(Self.shell, arguments: ["-c", script])
    }
    let closesItsOutput = script.hasPrefix("exec")

    #expect(status.code == 0, "code must be the program's terminationStatus")
    // The program takes 1.5 s; a run() that suspends holds its thread for moments only.
    let held = executor.longestJob
    let seconds = (held / .milliseconds(100)).rounded() / 10
    #expect(
      held < .seconds(1),
      Comment(
        rawValue: closesItsOutput
          ? "run() blocked its thread instead of suspending: this program closed its output "
            + "at once and ran on for 1.5 s, and one step held its thread for \(seconds) s: "
            + "both pipes had ended, but the program had not (waitUntilExit() once the reads "
            + "are done?). The end of the output is not the end of the program: suspend until "
            + "the terminationHandler resumes you."
          : "run() blocked its thread instead of suspending: one step held its thread for "
            + "\(seconds) s while the program ran (waitUntilExit(), or reading a pipe right "
            + "in the async function or in an async let). Suspend until the "
            + "terminationHandler resumes you, and read each pipe on a thread of its own."))
    let steps = executor.jobsRun
    #expect(
      steps <= Self.mostStepsWhileRunning,
      """
      run() polled instead of suspending: it ran \(steps) separate steps on its thread while \
      a program ran for 1.5 s (a Task.sleep loop checking isRunning?), waking up again and \
      again for nothing and noticing the exit only at its next look. Suspend until the \
      terminationHandler resumes you.
      """)
  }

  /// The most separate steps a run() that suspends takes on its thread for one program:
  /// starting, the reads' tasks, the exit and the reads' ends each wake it once or twice.
  static let mostStepsWhileRunning = 14

  @Test("run() holds no thread of the concurrency pool, in any task, while a program runs")
  func holdsNoPoolThreadWhileRunning() async throws {
    let runner = WatchedRunner().runner
    // The program runs until the test has seen 4 s of time in which this process could run
    // (at least 4 s), so that even on a busy machine it outlasts the deadline's pool check:
    // a thread of the pool held while it waits for the exit (waitUntilExit() in a detached
    // task, too) is noticed by that check before the program ends.
    let ending = ProgramEnding(after: .seconds(4))
    defer { ending.endNow() }

    let status = try await withDeadline(
      .seconds(10), "run(/bin/sh -c \"wait, then echo done\")",
      hint: """
        run() holds a thread of the concurrency pool while the program runs; waiting for \
        the exit in another task still holds one of the pool's few threads, so suspend \
        until the terminationHandler resumes you
        """
    ) {
      try await runner.run(Self.shell, arguments: ["-c", ending.script(then: "echo done")])
    }

    #expect(status.code == 0, "code must be the program's terminationStatus")
    #expect(status.output == "done\n", "output must hold everything it wrote to stdout")
  }

  @Test("A program killed by a signal reports the signal")
  func killedBySignal() async throws {
    let status = try await run(WatchedRunner(), Self.shell, ["-c", "kill -KILL $$"])

    #expect(
      status.reason == .uncaughtSignal,
      """
      a signal killed the program, so reason must be .uncaughtSignal: report the process's \
      terminationReason, not a fixed .exit
      """)
    #expect(status.code == 9, "for a signal, the code is the signal's number")
    #expect(!status.succeeded)
  }

  @Test("A program that cannot be started throws instead of suspending forever")
  func launchFailure() async throws {
    let watched = WatchedRunner()
    let error = await #expect(throws: (any Error).self) {
      try await run(
        watched, URL(fileURLWithPath: "/no/such/program"),
        hint:
          "when run() throws, the continuation is never resumed, or a pipe is left open so reading it never ends"
      )
    }
    // Foundation reports a missing executable as a Cocoa error; pass it on unchanged.
    let domain = (error as? NSError)?.domain
    #expect(
      domain == NSCocoaErrorDomain,
      "expected the error Process.run() threw, got \(error.map { "\($0)" } ?? "none")")

    // No child was started to hold the pipes' write ends and close them at its exit: ours
    // must be closed, or a read started for a pipe waits for ever, with its thread.
    let pipes = watched.made.value.flatMap { [$0.standardOutput, $0.standardError] }
      .compactMap { $0 as? Pipe }
    try #require(pipes.count == 2, "run(_:arguments:) must keep the two pipes it is given")
    _ = await eventually(within: .seconds(2)) { pipes.allSatisfy(Self.writeEndsClosed) }
    let stillOpen = pipes.filter { !Self.writeEndsClosed($0) }
    #expect(
      stillOpen.isEmpty,
      """
      run() threw, but \(stillOpen.count == 2 ? "both pipes were" : "one pipe was") still \
      open for writing 2 s later: a read started for a pipe never reaches end of file, so each program that cannot \
      start leaves a thread waiting and the pipe's files open for ever. When run() throws, \
      no child holds the write ends: close them yourself
      """)
  }

  /// True when no one holds `pipe`'s write end open (its read end reports a hang-up). It
  /// neither waits nor reads, so it blocks no thread and takes nothing from a reader.
  @Sendable static func writeEndsClosed(_ pipe: Pipe) -> Bool {
    var poller = pollfd(
      fd: pipe.fileHandleForReading.fileDescriptor, events: Int16(POLLHUP), revents: 0)
    guard poll(&poller, 1, 0) == 1 else { return false }
    // A read end closed already (POLLNVAL) was read to its end.
    return poller.revents & Int16(POLLHUP | POLLNVAL) != 0
  }

  @Test("Output far larger than a pipe's buffer comes back whole, on both streams")
  func largeOutput() async throws {
    let line = String(repeating: "0123456789abcdef", count: 4)  // 64 bytes + newline
    let lines = 4_000  // 260 000 bytes per stream: four times a Linux pipe's buffer
    let script =
      "i=0; while [ $i -lt \(lines) ]; do echo \(line); echo \(line) >&2; i=$((i+1)); done"

    let status = try await run(
      WatchedRunner(), Self.shell, ["-c", script],
      hint:
        "a pipe is not read while the program runs (read only after it exits, or not at all); once its buffer is full, the program waits for a reader forever"
    )

    #expect(status.code == 0)
    #expect(
      status.output.utf8.count == lines * (line.utf8.count + 1),
      "output must hold everything the program wrote to stdout")
    #expect(
      status.errorOutput.utf8.count == lines * (line.utf8.count + 1),
      "errorOutput must hold everything the program wrote to standard error")
    #expect(status.output.split(separator: "\n").allSatisfy { $0 == line })
  }

  @Test("One runner runs programs one after another and at the same time")
  func runningTwice() async throws {
    let runner = WatchedRunner()
    let echo = URL(fileURLWithPath: "/bin/echo")

    let first = try await run(runner, echo, ["first"])
    let second = try await run(runner, echo, ["second"])
    #expect(first.output == "first\n")
    #expect(second.output == "second\n")

    async let a = run(runner, Self.shell, ["-c", "sleep 0.1; echo a; exit 4"])
    async let b = run(runner, echo, ["b"])
    let (left, right) = try await (a, b)
    #expect(left.output == "a\n")
    #expect(left.code == 4)
    #expect(right.output == "b\n")
    #expect(right.code == 0)
  }

  @Test("A character written in two writes, its bytes apart, comes back whole")
  func characterSplitBetweenWrites() async throws {
    // "é" is two bytes; the program writes the first, waits, then writes the second, five
    // times over: a reader that decodes each read on its own cuts the character in two.
    let script = "for i in 1 2 3 4 5; do printf 'a\\303'; sleep 0.1; printf '\\251'; done"

    let status = try await run(WatchedRunner(), Self.shell, ["-c", script])

    #expect(
      status.output == "aéaéaéaéaé",
      """
      the program wrote "aé" five times, each "é" as two bytes in two writes, and output is \
      \(String(reflecting: status.output)): the bytes of one read were decoded apart from \
      the next, so a character split between two reads was lost; decode the whole output \
      once it has all arrived
      """)
  }

  @Test("Bytes that are not UTF-8 become U+FFFD, and the rest of the output is kept")
  func bytesThatAreNotUTF8() async throws {
    let status = try await run(WatchedRunner(), Self.shell, ["-c", "printf 'ok \\377 end'"])

    #expect(
      status.output == "ok \u{FFFD} end",
      """
      the program wrote "ok ", a byte that is not UTF-8, and " end", and output is \
      \(String(reflecting: status.output)): decoding as UTF-8 replaces a bad byte with \
      U+FFFD and keeps everything else (String(data:encoding:) gives up on the whole text)
      """)
  }
}

/// Ends a program started with ``script(then:)`` once `limit` of time in which this process
/// could run has passed, counted on a thread of its own in slices of 5 ms: a slice that wakes
/// up late on a busy machine counts as the slice, not as the whole delay. (The deadline's
/// pool check counts its patience the same way, never slower, so the program outlasts it.)
/// A wall-clock cap of 20 s ends it anyway, and the program gives up by itself after 20 s
/// (a test process that dies leaves no program behind for long).
final class ProgramEnding: Sendable {
  private let marker = FileManager.default.temporaryDirectory
    .appendingPathComponent("workbook-1.7-ending-\(UUID().uuidString)")

  init(after limit: Duration) {
    let marker = marker
    Thread.detachNewThread {
      let cap = ContinuousClock.now.advanced(by: .seconds(20))
      var counted = Duration.zero
      while counted < limit, ContinuousClock.now < cap,
        !FileManager.default.fileExists(atPath: marker.path)
      {
        let start = ContinuousClock.now
        Thread.sleep(forTimeInterval: 0.005)
        counted += min(ContinuousClock.now - start, .milliseconds(5))
      }
      _ = FileManager.default.createFile(atPath: marker.path, contents: nil)
      // The program looks every 50 ms; then the marker is no longer needed.
      Thread.sleep(forTimeInterval: 1)
      try? FileManager.default.removeItem(at: marker)
    }
  }

  /// A shell script that waits until the program's end has come, then runs `command`.
  func script(then command: String) -> String {
    """
    i=0; while [ ! -e '\(marker.path)' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; \
    \(command)
    """
  }

  /// Ends the program now, if it still runs.
  func endNow() {
    _ = FileManager.default.createFile(atPath: marker.path, contents: nil)
  }
}
