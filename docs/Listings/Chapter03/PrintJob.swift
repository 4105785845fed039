// Chapter 3, exercise 3.4: withTaskCancellationHandler connects a task's cancellation to a
// legacy operation's own way to stop.
import Foundation
import LegacyKit
import Synchronization

struct Document: Sendable { var title: String }
struct PrintAborted: Error {}

/// A legacy print job: it reports once when done, or, after `abort()`, with PrintAborted.
final class PrintJob: @unchecked Sendable {
  private let done = Mutex<(@Sendable (Result<Void, any Error>) -> Void)?>(nil)

  func whenDone(_ handler: @escaping @Sendable (Result<Void, any Error>) -> Void) {
    done.withLock { $0 = handler }
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { [self] in
      done.withLock { $0.take() }?(.success(()))
    }
  }

  func abort() {
    done.withLock { $0.take() }?(.failure(PrintAborted()))
  }
}

final class Printer: @unchecked Sendable {
  func submit(_ document: Document) -> PrintJob { PrintJob() }
}

extension PrintJob {
  /// Waits for the job, the Chapter 1 way.
  func completion() async throws {
    try await withCheckedThrowingContinuation { continuation in
      whenDone { result in continuation.resume(with: result) }
    }
  }
}

func print(_ document: Document, on printer: Printer) async throws {
  // listing: handler
  let job = printer.submit(document)
  try await withTaskCancellationHandler {
    try await job.completion()  // wait for the job
  } onCancel: {
    job.abort()  // runs at once, on the thread that cancelled the task
  }
  // listing: end
}
