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
  // TODO: Cancelling the calling task, at any moment (even before this call), cancels the
  // download and throws `CancellationError`; other results pass through unchanged. This
  // downloader may call back again after it has reported a cancellation.
  throw Unfinished()
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
