import Foundation

/// How a child process ended, and everything it wrote.
struct ExitStatus: Equatable, Sendable {
  /// The exit code, or the signal number when `reason` is `.uncaughtSignal`.
  var code: Int32
  var reason: Process.TerminationReason
  /// Its standard output, decoded as UTF-8 (a byte that is not UTF-8 becomes U+FFFD).
  var output: String
  /// Its standard error, decoded as UTF-8 (a byte that is not UTF-8 becomes U+FFFD).
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

    // TODO: Start the process and, without holding a thread while it runs, return how it ended
    // and everything it wrote to each pipe, however much that is, once it has exited. Throw
    // the error if it cannot be started.
    throw ProcessBridgeNotWritten()
  }
}

private struct ProcessBridgeNotWritten: Error {}
