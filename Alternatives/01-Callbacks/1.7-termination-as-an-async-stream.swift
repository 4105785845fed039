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

    // Drain both pipes from the start, concurrently with the wait below. A pipe holds only
    // a little (64 KiB on Linux); a child that writes more blocks until someone reads, so
    // reading only after it exits would wait forever. Each read ends once every write end
    // is closed: the child's when it exits, ours when `run()` has launched it (or below).
    async let outputData = output.fileHandleForReading.readToEndOnOwnThread()
    async let errorData = errorOutput.fileHandleForReading.readToEndOnOwnThread()

    // The handler yields into a stream made before the process starts, so an exit that
    // comes before anyone waits is kept (the stream buffers it) rather than lost.
    let (exits, exited) = AsyncStream.makeStream(
      of: (code: Int32, reason: Process.TerminationReason).self)
    process.terminationHandler = { process in
      exited.yield((process.terminationStatus, process.terminationReason))
      exited.finish()
    }
    do {
      try process.run()
    } catch {
      try? output.fileHandleForWriting.close()
      try? errorOutput.fileHandleForWriting.close()
      throw error
    }
    var iterator = exits.makeAsyncIterator()
    guard let ended = await iterator.next() else { throw CancellationError() }

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
  /// own. Blocking a thread of Swift's cooperative pool, or of a global Dispatch queue,
  /// would take it from everyone else: both have about one thread per core.
  fileprivate func readToEndOnOwnThread() async -> Data {
    await withCheckedContinuation { continuation in
      Thread {
        continuation.resume(returning: self.readDataToEndOfFile())
      }.start()
    }
  }
}
