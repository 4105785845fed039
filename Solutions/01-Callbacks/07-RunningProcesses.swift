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

    // Drain both pipes from the start, concurrently with the wait below. A pipe holds only
    // a little (64 KiB on Linux); a child that writes more blocks until someone reads, so
    // reading only after it exits would wait forever. Each read ends once every write end
    // is closed: the child's when it exits, ours when `run()` has launched it (or below).
    async let outputData = output.fileHandleForReading.readToEndOnOwnThread()
    async let errorData = errorOutput.fileHandleForReading.readToEndOnOwnThread()

    let ended: (code: Int32, reason: Process.TerminationReason)
    do {
      ended = try await withCheckedThrowingContinuation { continuation in
        // Install the handler BEFORE `run()`. A short program can exit before `run()` even
        // returns, and Foundation looks for a handler only once, when the child is reaped:
        // a handler set too late is never called, and the caller would wait forever.
        process.terminationHandler = { process in
          continuation.resume(returning: (process.terminationStatus, process.terminationReason))
        }
        do {
          try process.run()
        } catch {
          // It never started, so the handler will never run: resume here instead.
          continuation.resume(throwing: error)
        }
      }
    } catch {
      // No child holds the write ends, so close ours: the reads above then reach end of
      // file, and the `async let`s can finish.
      try? output.fileHandleForWriting.close()
      try? errorOutput.fileHandleForWriting.close()
      throw error
    }

    return ExitStatus(
      code: ended.code, reason: ended.reason,
      output: String(decoding: await outputData, as: UTF8.self),
      errorOutput: String(decoding: await errorData, as: UTF8.self))
  }
}

extension FileHandle {
  /// Everything left to read, up to end of file.
  ///
  /// The read blocks its thread for as long as the child runs, so it gets a thread of its
  /// own. Swift's cooperative pool has about one thread per core and never adds one, so a
  /// blocked read would take a thread from every other task. (A global Dispatch queue
  /// copes better, since libdispatch adds workers when its threads block, but each blocked
  /// read still holds one of them, and the number it adds is capped.)
  fileprivate func readToEndOnOwnThread() async -> Data {
    await withCheckedContinuation { continuation in
      Thread {
        continuation.resume(returning: self.readDataToEndOfFile())
      }.start()
    }
  }
}
