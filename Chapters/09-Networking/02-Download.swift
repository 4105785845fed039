import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The legacy way: a downloader object that is its session's delegate and reports through
// two closures, progress any number of times and then, once, the file or an error.
//
//     let downloader = LegacyDownloader()
//     downloader.download(url, progress: { received, expected in
//       bar.progress = Double(received) / Double(expected)
//     }, completion: { file, error in
//       if let file { open(file) } else { show(error!) }
//     })
//
// The session keeps its delegate (strongly!) until it is invalidated, and the file a
// download task hands to `didFinishDownloadingTo` is deleted as soon as that method
// returns: move it first.

/// What a download reports: bytes as they arrive, then, last, the file.
enum DownloadEvent: Equatable, Sendable {
  /// `received` bytes so far of `expected` (-1 when the server did not say).
  case progress(received: Int64, expected: Int64)
  /// The downloaded file, moved to a place of its own; the caller owns it.
  case finished(URL)
}

/// A download whose response status was not 2xx.
struct DownloadFailed: Error, Equatable {
  let status: Int
}

/// Downloads `url` with a session of its own, as a stream of events: progress while the
/// bytes arrive, then `.finished(file)`, then the end. The stream throws the session's
/// error (or ``DownloadFailed`` for a status that is not 2xx) when the download fails.
/// Stopping iterating (or cancelling the iterating task) cancels the download; either way
/// the session is invalidated when the download ends, so neither it nor its connection
/// outlives the stream.
func download(
  from url: URL, configuration: URLSessionConfiguration = .ephemeral
) -> AsyncThrowingStream<DownloadEvent, any Error> {
  // TODO: Make a session of its own whose delegate (a URLSessionDownloadDelegate you
  // write) turns the session's callbacks into this stream's events, and start a download
  // task. The stream ends after `.finished(file)`, throws when the download fails, and
  // cancels the download when the caller stops listening. The session must not outlive
  // the download.
  AsyncThrowingStream { $0.finish(throwing: Unfinished()) }
}

private struct Unfinished: Error {}
