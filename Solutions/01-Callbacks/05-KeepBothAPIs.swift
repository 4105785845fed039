import LegacyKit

// `WeatherStation` lives in a framework you cannot change, and many call sites already use
// its callback API, like this one. They must keep compiling and working, unchanged.
func describeWeather(
  in city: String, from station: WeatherStation,
  completion: @escaping @Sendable (String) -> Void
) {
  station.currentReading(for: city) { result in
    switch result {
    case .success(let reading): completion(reading.description)
    case .failure(let error): completion("\(city): unavailable (\(error))")
    }
  }
}

// An extension adds the async API without touching the type or its existing API. It has the
// same base name: Swift tells the two apart by their shapes (one takes a completion handler,
// the other is `async`), so old call sites resolve exactly as before, and new ones read
// `try await station.currentReading(for: city)`.
extension WeatherStation {
  /// The current reading for `city`, for new code written with async/await.
  func currentReading(for city: String) async throws -> WeatherReading {
    // Forward to the callback API rather than reimplementing it: both APIs then share one
    // behaviour. The handler always runs exactly once, so resuming there is safe, and
    // `resume(with:)` forwards failures as well as values: resuming only on success would
    // leave a caller suspended forever when the station fails.
    try await withCheckedThrowingContinuation { continuation in
      currentReading(for: city) { result in
        continuation.resume(with: result)
      }
    }
  }
}
