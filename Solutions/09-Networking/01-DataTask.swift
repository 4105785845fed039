import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The legacy way: ask for a path, hear back once in a completion handler, on one of the
// session's threads, with the body and the response, or an error.
//
//     let task = client.fetch("/quote") { data, response, error in
//       if let error { show(error); return }
//       guard let response, (200..<300).contains(response.statusCode) else { … }
//       show(String(decoding: data ?? Data(), as: UTF8.self))
//     }
//     …
//     task.cancel()   // the legacy cancel: the completion then gets URLError(.cancelled)

/// A quotes service client, written before async/await.
final class QuoteClient: Sendable {
  let baseURL: URL
  let session: URLSession

  init(baseURL: URL, session: URLSession = .shared) {
    self.baseURL = baseURL
    self.session = session
  }

  /// Starts a GET of `path` and returns its task; `completion` runs exactly once, on one of
  /// the session's threads: with the body and the response, or with the error
  /// (`URLError(.cancelled)` after `cancel()`). A 404 or a 500 is not an error here: it is
  /// a response like any other, with its status code.
  @discardableResult
  func fetch(
    _ path: String,
    completion: @escaping @Sendable (Data?, HTTPURLResponse?, (any Error)?) -> Void
  ) -> URLSessionDataTask {
    let task = session.dataTask(with: URL(string: path, relativeTo: baseURL)!) {
      data, response, error in
      completion(data, response as? HTTPURLResponse, error)
    }
    task.resume()
    return task
  }
}

/// A response whose status code is not 2xx.
struct BadStatus: Error, Equatable {
  let code: Int
}

extension QuoteClient {
  /// The body at `path`.
  ///
  /// Throws ``BadStatus`` when the status is not 2xx, the session's error when the request
  /// fails (refused, dropped, truncated, …), and `CancellationError` when the task is
  /// cancelled, which cancels the `URLSessionDataTask` (the server sees the connection
  /// close).
  func fetch(_ path: String) async throws -> Data {
    // onCancel may run before the data task exists (a task cancelled before it called
    // us) or while it is being created: the box remembers either, under a lock.
    let box = DataTaskBox()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        // Already cancelled: do not even start the request.
        guard !box.isCancelled else {
          continuation.resume(throwing: CancellationError())
          return
        }
        let task = fetch(path) { data, response, error in
          // After cancel() the session reports URLError(.cancelled): that is our cancel.
          // A request quick enough to finish before the cancel reached it was cancelled
          // all the same.
          if box.isCancelled || (error as? URLError)?.code == .cancelled {
            continuation.resume(throwing: CancellationError())
            return
          }
          if let error {
            continuation.resume(throwing: error)
            return
          }
          guard let response else {
            continuation.resume(throwing: URLError(.badServerResponse))
            return
          }
          guard (200..<300).contains(response.statusCode) else {
            continuation.resume(throwing: BadStatus(code: response.statusCode))
            return
          }
          continuation.resume(returning: data ?? Data())
        }
        box.started(task)
      }
    } onCancel: {
      box.cancel()
    }
  }
}

/// The data task of one `fetch`, and whether it was cancelled: whichever of the two comes
/// second cancels the task. Sendable because a Mutex guards its state.
private final class DataTaskBox: Sendable {
  private let state = Mutex<(task: URLSessionDataTask?, cancelled: Bool)>((nil, false))

  func started(_ task: URLSessionDataTask) {
    let cancelled = state.withLock {
      $0.task = task
      return $0.cancelled
    }
    if cancelled { task.cancel() }
  }

  var isCancelled: Bool { state.withLock { $0.cancelled } }

  func cancel() {
    let task = state.withLock {
      $0.cancelled = true
      return $0.task
    }
    task?.cancel()
  }
}
