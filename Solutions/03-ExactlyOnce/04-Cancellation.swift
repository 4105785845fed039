import Foundation
import LegacyKit
import Synchronization

// The callback way:
//
//     let task = downloader.download(reportURL) { result in
//       // .success(data), .failure(.notFound), or .failure(.cancelled) after a cancel
//     }
//     …
//     task.cancel()  // the user closed the screen

/// Downloads `url`. Cancelling the calling task cancels the download and throws
/// `CancellationError`.
func download(_ url: URL, with downloader: FileDownloader) async throws -> Data {
  let handle = DownloadHandle()
  return try await withTaskCancellationHandler {
    try await withCheckedThrowingContinuation { continuation in
      // The downloader may call back twice (a cancelled reply, then the file anyway), so
      // the first answer wins and the rest are ignored: ResumeOnce from exercise 3.2.
      let once = ResumeOnce(continuation)
      let task = downloader.download(url) { result in
        switch result {
        case .success(let data): once.resume(returning: data)
        // Swift code expects cancellation to look like CancellationError.
        case .failure(.cancelled): once.resume(throwing: CancellationError())
        case .failure(let error): once.resume(throwing: error)
        }
      }
      handle.attach(task)
    }
  } onCancel: {
    // Runs on whichever thread cancels the task, possibly before the operation above has
    // even started. It only asks the download to stop; the downloader's cancelled reply is
    // what resumes the continuation, so there is one place that resumes, not two.
    handle.cancel()
  }
}

/// The meeting point of the operation and `onCancel`, which can run in either order and
/// at the same time: whichever comes second sees what the first left behind.
private final class DownloadHandle: Sendable {
  private enum State {
    case notStarted
    case running(DownloadTask)
    case cancelled
  }

  private let state = Mutex(State.notStarted)

  /// Records the running download, or cancels it at once if the task was cancelled first.
  func attach(_ task: DownloadTask) {
    let cancelledFirst = state.withLock { state in
      if case .cancelled = state { return true }
      state = .running(task)
      return false
    }
    // Outside the lock: cancel() may call back synchronously, inside the call.
    if cancelledFirst { task.cancel() }
  }

  /// Cancels the running download, or makes sure a download that starts later is cancelled.
  func cancel() {
    let running = state.withLock { state -> DownloadTask? in
      defer { state = .cancelled }
      if case .running(let task) = state { return task }
      return nil
    }
    running?.cancel()
  }
}
