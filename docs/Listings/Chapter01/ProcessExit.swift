// Chapter 1, exercise 1.7: install the termination handler before run(), and resume from
// the catch when run() throws.
import Foundation

func exitCode(of process: Process) async throws -> Int32 {
  try await withCheckedThrowingContinuation { continuation in
    // listing: handler-first
    process.terminationHandler = { finished in
      continuation.resume(returning: finished.terminationStatus)
    }
    do {
      try process.run()
    } catch {
      continuation.resume(throwing: error)
    }
    // listing: end
  }
}
