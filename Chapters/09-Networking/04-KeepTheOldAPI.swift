import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The module now has an async API, but the app has forty call sites of the old one:
//
//     let request = weather.forecast(for: "oslo") { result in
//       switch result {
//       case .success(let text): label.text = text
//       case .failure(let error): show(error)
//       }
//     }
//     …
//     request.cancel()   // the screen went away: do not call me back
//
// Keep that API working, as a thin layer over the async one, until they are all migrated.

/// A forecast request that failed with a status code that is not 2xx.
struct ForecastUnavailable: Error, Equatable {
  let status: Int
}

/// The weather service, already migrated to async/await.
struct WeatherService: Sendable {
  let baseURL: URL
  let session: URLSession

  /// The forecast for `city`, as text. Throws ``ForecastUnavailable`` for a status that is
  /// not 2xx and the session's error when the request fails; cancelling the calling task
  /// cancels the request.
  func forecast(for city: String) async throws -> String {
    let url = baseURL.appendingPathComponent("forecast").appendingPathComponent(city)
    let (data, response) = try await session.data(from: url)
    if let response = response as? HTTPURLResponse, !(200..<300).contains(response.statusCode) {
      throw ForecastUnavailable(status: response.statusCode)
    }
    return String(decoding: data, as: UTF8.self)
  }
}

/// What the old API returns: cancelling it means "never call me back".
struct ForecastRequest: Sendable {
  fileprivate let task: Task<Void, Never>

  /// Cancels the request; the completion is then not called.
  func cancel() { task.cancel() }
}

extension WeatherService {
  /// The old API, kept for the call sites not migrated yet: `completion` is called exactly
  /// once, with the forecast or the error, unless the request is cancelled first, in which
  /// case it is never called. It is called on an arbitrary thread.
  @discardableResult
  func forecast(
    for city: String, completion: @escaping @Sendable (Result<String, any Error>) -> Void
  ) -> ForecastRequest {
    // TODO: Call the async `forecast(for:)` and hand its outcome to `completion`, exactly
    // once. The returned request's `cancel()` must cancel the request (the URLSession task
    // too), and after it the completion must never be called.
    ForecastRequest(task: Task {})
  }
}
