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
  // TODO: Start the download inside a throwing continuation, inside
  // `withTaskCancellationHandler`, whose `onCancel` cancels the `DownloadTask`. Throw
  // `CancellationError()` for `DownloadError.cancelled`. Beware: `onCancel` may run before
  // the download has started (the task may already be cancelled), and this downloader can
  // call back again after reporting a cancellation (`ResumeOnce` from 3.2 handles that).
  throw Unfinished()
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
