// Chapter 5, exercise 5.1: the call site before and after. Blocking needs a coroutine;
// suspending works from any async code.
import CoroutineKit

struct Forecast: Sendable { var summary: String }

final class WeatherService: @unchecked Sendable {
  func forecast(for city: String) -> CoFuture<Forecast> {
    CoFuture(value: Forecast(summary: "sunny in \(city)"))
  }
}

// listing: hide
extension CoFuture where Value: Sendable {
  var value: Value {
    get async throws {
      try await withCheckedThrowingContinuation { continuation in
        whenComplete { continuation.resume(with: $0) }
      }
    }
  }
}
// listing: show

/// Runs inside a coroutine.
func legacyForecast(from weather: WeatherService) throws -> Forecast {
  // listing: blocking
  let forecast = try weather.forecast(for: "Porto").await()  // blocks a coroutine's thread
  // listing: end
  return forecast
}

func forecast(from weather: WeatherService) async throws -> Forecast {
  // listing: suspending
  let forecast = try await weather.forecast(for: "Porto").value  // suspends the task
  // listing: end
  return forecast
}
