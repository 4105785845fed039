import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The legacy way: a repeating timer that fires a request every few seconds and hands each
// answer to a closure, until somebody remembers to invalidate the timer.
//
//     timer = Timer.scheduledTimer(withTimeInterval: 5, repeats: true) { [weak self] _ in
//       self?.session.dataTask(with: statusURL) { data, response, error in
//         DispatchQueue.main.async { self?.show(data, response, error) }
//       }.resume()
//     }
//     …
//     deinit { timer?.invalidate() }   // forget this, and it polls forever

/// A poll whose response status was not 2xx.
struct PollFailed: Error, Equatable {
  let status: Int
}

/// The body of `url`, fetched now and then every `interval`, as text, for as long as
/// somebody iterates.
///
/// The stream throws ``PollFailed`` for a status that is not 2xx and the session's error
/// when a request fails; either ends it. When the caller stops listening (breaks out of
/// the loop, or its task is cancelled), polling stops: no further request, and the one in
/// flight, if any, is cancelled.
func poll(
  _ url: URL, every interval: Duration, session: URLSession
) -> AsyncThrowingStream<String, any Error> {
  // TODO: Poll `url` now and then every `interval`, yielding each body as text, for as
  // long as somebody listens. A status that is not 2xx ends the stream with `PollFailed`,
  // a failed request with the session's error. When the caller stops listening, no more
  // requests go out and the one in flight is cancelled.
  AsyncThrowingStream { $0.finish(throwing: Unfinished()) }
}

private struct Unfinished: Error {}
