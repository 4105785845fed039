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
    // TODO: Give `currentReading(for:completion:)` this async twin: call the callback API,
    // suspend until it answers, then return the reading or throw the station's error.
    throw AsyncTwinNotWritten()
  }
}

private struct AsyncTwinNotWritten: Error {}
