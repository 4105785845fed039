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
  let (statuses, continuation) = AsyncThrowingStream.makeStream(of: String.self)
  // The timer of the legacy code becomes a loop in a task: sleeping is the interval, and
  // cancelling the task is invalidating the timer. It also cancels the request in flight,
  // since `data(from:)` is cancelled with the task that awaits it.
  let poller = Task {
    do {
      while true {
        let (data, response) = try await session.data(from: url)
        if let response = response as? HTTPURLResponse,
          !(200..<300).contains(response.statusCode)
        {
          throw PollFailed(status: response.statusCode)
        }
        continuation.yield(String(decoding: data, as: UTF8.self))
        try await Task.sleep(for: interval)
      }
    } catch {
      continuation.finish(throwing: error)
    }
  }
  // Nobody listens any more (or the stream ended): stop the loop.
  continuation.onTermination = { _ in poller.cancel() }
  return statuses
}
