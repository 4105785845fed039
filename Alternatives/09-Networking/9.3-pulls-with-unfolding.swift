import Foundation
import Synchronization

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
  // Pull, not push: each `next()` of the caller runs one poll (after the interval, but
  // for the first), in the caller's task. Breaking out of the loop means no more `next()`,
  // so no more requests; cancelling the caller's task cancels the sleep or the request
  // it is in. No timer and no task of our own to stop.
  let polls = PollCount()
  return AsyncThrowingStream {
    if polls.next() > 1 { try await Task.sleep(for: interval) }
    let (data, response) = try await session.data(from: url)
    if let response = response as? HTTPURLResponse, !(200..<300).contains(response.statusCode) {
      throw PollFailed(status: response.statusCode)
    }
    return String(decoding: data, as: UTF8.self)
  }
}

/// How many polls have started; the first one does not wait.
private final class PollCount: Sendable {
  private let count = Mutex(0)

  func next() -> Int {
    count.withLock {
      $0 += 1
      return $0
    }
  }
}
