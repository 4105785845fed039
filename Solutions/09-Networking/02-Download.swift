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
  let (events, continuation) = AsyncThrowingStream.makeStream(of: DownloadEvent.self)
  let delegate = DownloadDelegate(continuation)
  // The session holds its delegate strongly until it is invalidated: the delegate
  // invalidates it when the task completes, which breaks that cycle.
  let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
  let task = session.downloadTask(with: url)
  continuation.onTermination = { _ in
    // Finished or abandoned: cancelling a completed task does nothing.
    task.cancel()
  }
  task.resume()
  return events
}

/// The session's delegate: turns its callbacks into the stream's events. Sendable: it holds
/// only the stream's continuation, which is.
private final class DownloadDelegate: NSObject, URLSessionDownloadDelegate, Sendable {
  private let continuation: AsyncThrowingStream<DownloadEvent, any Error>.Continuation

  init(_ continuation: AsyncThrowingStream<DownloadEvent, any Error>.Continuation) {
    self.continuation = continuation
  }

  func urlSession(
    _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
    totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
  ) {
    continuation.yield(.progress(received: totalBytesWritten, expected: totalBytesExpectedToWrite))
  }

  func urlSession(
    _ session: URLSession, downloadTask: URLSessionDownloadTask,
    didFinishDownloadingTo location: URL
  ) {
    if let response = downloadTask.response as? HTTPURLResponse,
      !(200..<300).contains(response.statusCode)
    {
      continuation.finish(throwing: DownloadFailed(status: response.statusCode))
      return
    }
    // The session deletes `location` when this method returns: move it now.
    let file = FileManager.default.temporaryDirectory
      .appendingPathComponent("download-\(UUID().uuidString)")
    do {
      try FileManager.default.moveItem(at: location, to: file)
      continuation.yield(.finished(file))
      continuation.finish()
    } catch {
      continuation.finish(throwing: error)
    }
  }

  func urlSession(
    _ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?
  ) {
    // Runs last, on every path. Finishing twice is harmless: the first one counts.
    if let error {
      continuation.finish(throwing: error)
    } else {
      continuation.finish()
    }
    session.finishTasksAndInvalidate()
  }
}
