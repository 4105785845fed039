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
      let once = ResumeOnce(continuation)
      let task = downloader.download(url) { result in
        switch result {
        case .success(let data): once.resume(returning: data)
        case .failure(.cancelled): once.resume(throwing: CancellationError())
        case .failure(let error): once.resume(throwing: error)
        }
      }
      handle.attach(task, once)
    }
  } onCancel: {
    handle.cancel()
  }
}

/// What onCancel needs: the download to stop and the continuation to throw at once,
/// without waiting for the downloader's cancelled reply (which ResumeOnce then ignores).
private final class DownloadHandle: Sendable {
  private enum State {
    case notStarted
    case running(DownloadTask, ResumeOnce<Data, any Error>)
    case cancelled
  }

  private let state = Mutex(State.notStarted)

  func attach(_ task: DownloadTask, _ once: ResumeOnce<Data, any Error>) {
    let cancelledFirst = state.withLock { state in
      if case .cancelled = state { return true }
      state = .running(task, once)
      return false
    }
    if cancelledFirst { stop(task, once) }
  }

  func cancel() {
    let running = state.withLock { state -> (DownloadTask, ResumeOnce<Data, any Error>)? in
      defer { state = .cancelled }
      if case .running(let task, let once) = state { return (task, once) }
      return nil
    }
    if let (task, once) = running { stop(task, once) }
  }

  /// Outside the lock, both: cancel() may call back at once, and resuming under a lock
  /// that onCancel takes can deadlock with the cancelling thread.
  private func stop(_ task: DownloadTask, _ once: ResumeOnce<Data, any Error>) {
    task.cancel()
    once.resume(throwing: CancellationError())
  }
}
