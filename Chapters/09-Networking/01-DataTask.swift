import Foundation

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
    // TODO: Wrap `fetch(_:completion:)` so that it resumes exactly once: the data for a
    // 2xx, `BadStatus` for any other status, the session's error otherwise. Cancelling
    // the task must cancel the data task the legacy call returns (and throw
    // `CancellationError`), even when the task was cancelled before the data task existed.
    throw Unfinished()
  }
}

private struct Unfinished: Error {}
