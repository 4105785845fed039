import Foundation

/// How a child process ended, and everything it wrote.
struct ExitStatus: Equatable, Sendable {
  /// The exit code, or the signal number when `reason` is `.uncaughtSignal`.
  var code: Int32
  var reason: Process.TerminationReason
  /// Its standard output, decoded as UTF-8.
  var output: String
  /// Its standard error, decoded as UTF-8.
  var errorOutput: String

  var succeeded: Bool { reason == .exit && code == 0 }
}

/// Runs programs with Foundation's `Process`, for code written with async/await.
struct ProcessRunner: Sendable {
  /// Makes the `Process` for each run: tests pass their own.
  var makeProcess: @Sendable () -> Process = { Process() }

  /// Runs `executable` with `arguments`, suspending until it exits.
  func run(_ executable: URL, arguments: [String] = []) async throws -> ExitStatus {
    let process = makeProcess()
    process.executableURL = executable
    process.arguments = arguments
    let output = Pipe()
    let errorOutput = Pipe()
    process.standardOutput = output
    process.standardError = errorOutput

    // TODO: Start the process and suspend until its `terminationHandler` reports the exit,
    // then return its status and both outputs. Throw if it cannot start. Keep reading both
    // pipes while it runs: a child that fills a pipe's buffer waits for a reader forever.
    throw ProcessBridgeNotWritten()
  }
}

private struct ProcessBridgeNotWritten: Error {}
