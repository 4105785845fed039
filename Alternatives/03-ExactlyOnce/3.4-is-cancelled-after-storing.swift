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
  // Only the running download is shared with onCancel. A cancel that comes before it is
  // stored is not lost: the task's cancelled flag is set before onCancel runs, so the
  // operation checks it after storing the download.
  let running = Mutex<DownloadTask?>(nil)
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
      running.withLock { $0 = task }
      if Task.isCancelled { task.cancel() }
    }
  } onCancel: {
    running.withLock { $0 }?.cancel()
  }
}
