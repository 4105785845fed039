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

extension WeatherStation {
  /// The current reading for `city`, for new code written with async/await.
  func currentReading(for city: String) async throws -> WeatherReading {
    // TODO: Make this the async twin of `currentReading(for:completion:)`: the same request,
    // answered with the same reading or the station's own error. The callback API and its
    // call sites stay as they are.
    throw AsyncTwinNotWritten()
  }
}

private struct AsyncTwinNotWritten: Error {}
