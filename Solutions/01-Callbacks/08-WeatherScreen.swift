import Dispatch
import LegacyKit

/// Everything the weather screen shows for one city.
struct WeatherScreen: Equatable, Sendable {
  var conditions: SkyConditions
  /// The next five days.
  var forecast: [DayForecast]
  /// The error that came with a forecast from the SDK's cache (shown as a "may be out of
  /// date" banner); `nil` for a fresh forecast.
  var forecastWarning: ForecastError?
  /// `nil` when the city has no radar: the screen just leaves the map out.
  var radar: RadarMap?
}

/// Thrown when the forecast handler receives neither a forecast nor an error.
struct EmptyForecast: Error, Equatable {}

// The app's old loader, from before async/await. It still has callers in the widget
// extension, and support tickets: some cities' screens never stop loading, and a forecast
// served from the cache shows as an error instead of with its banner.
func loadWeatherScreen(
  for city: String,
  from client: ForecastClient,
  progress: @escaping (Double) -> Void,
  completion: @escaping (Result<WeatherScreen, Error>) -> Void
) {
  client.currentConditions(in: city) { result in
    switch result {
    case .failure(let error):
      completion(.failure(error))
    case .success(let conditions):
      client.forecast(forStation: conditions.stationID, days: 5) { days, error in
        if let error {
          completion(.failure(error))
          return
        }
        guard let days else { return }
        client.radarMap(of: city, progress: progress) { radar in
          let screen = WeatherScreen(
            conditions: conditions, forecast: days, forecastWarning: nil, radar: radar)
          completion(.success(screen))
        }
      }
    }
  }
}

/// The model behind the weather screen. Like all UI state, it lives on the main actor.
@MainActor
final class WeatherScreenModel {
  private let client: ForecastClient

  /// What the screen shows; `nil` until a refresh succeeds, and again after one fails.
  private(set) var screen: WeatherScreen?
  /// Why the last refresh failed; `nil` after one that succeeded.
  private(set) var failure: (any Error)?
  /// Where the radar's progress bar stands, from 0 to 1.
  private(set) var radarProgress: Double = 0 {
    didSet { progressShown.append(radarProgress) }
  }
  /// Every value the progress bar has shown, oldest first.
  private(set) var progressShown: [Double] = []

  init(client: ForecastClient) {
    self.client = client
  }

  /// Loads `city`'s conditions, then the five-day forecast of the station they name and the
  /// city's radar map, and shows them.
  ///
  /// - A conditions error is the refresh's failure, and nothing more is asked for.
  /// - A forecast alone is shown; an error alone is the failure; a forecast with an error
  ///   is shown with the error as its warning; neither is the failure ``EmptyForecast``.
  /// - Every progress value the radar reports reaches the progress bar, in order, before
  ///   refresh(city:) returns; a city without radar is shown without a map.
  /// - A failure sets ``failure`` and clears ``screen``; a success does the opposite. The
  ///   model shows the outcome by the time refresh(city:) returns.
  func refresh(city: String) async {
    // Three awaits in a row replace the pyramid: each step runs only if the one before it
    // succeeded, and every failure, from any step, lands in the one `catch`.
    do {
      let conditions = try await client.currentConditions(in: city)
      let forecast = try await client.forecast(forStation: conditions.stationID, days: 5)
      // The progress handler is @Sendable (the helper's parameter says so), so it belongs
      // to no actor and may run on the SDK's thread. It must not touch `radarProgress`
      // there: it sends each value to the main queue, which is serial, so the values reach
      // the progress bar in the order the SDK reported them. (Setting the property with
      // `MainActor.assumeIsolated` would trap whenever the SDK calls from a background
      // thread.)
      let radar = await client.radarMap(of: city) { fraction in
        DispatchQueue.main.async { self.radarProgress = fraction }
      }
      // After each await this method is back on the main actor, so the state is updated
      // here, where it belongs, before refresh() returns.
      screen = WeatherScreen(
        conditions: conditions, forecast: forecast.days, forecastWarning: forecast.warning,
        radar: radar)
      failure = nil
    } catch {
      screen = nil
      failure = error
    }
  }
}

// One async twin per SDK call. They live in a (nonisolated) extension of the client, so
// their handlers are formed outside the main actor: a handler written inside a @MainActor
// method would be inferred to belong to the main actor, and Swift 6 traps when the SDK calls
// it from a background thread. Each handler only resumes a continuation, which is safe from
// any thread, and the SDK calls each handler exactly once, so resuming there is enough.
extension ForecastClient {
  /// The `Result` style: `resume(with:)` forwards the failure as well as the value.
  func currentConditions(in city: String) async throws -> SkyConditions {
    try await withCheckedThrowingContinuation { continuation in
      currentConditions(in: city) { result in
        continuation.resume(with: result)
      }
    }
  }

  /// The `(value?, error?)` style: a switch over the pair names all four combinations, so
  /// none can be forgotten, and each resumes exactly once.
  func forecast(
    forStation stationID: String, days: Int
  ) async throws -> (days: [DayForecast], warning: ForecastError?) {
    try await withCheckedThrowingContinuation { continuation in
      forecast(forStation: stationID, days: days) { forecast, error in
        switch (forecast, error) {
        case (let forecast?, nil):
          continuation.resume(returning: (forecast, nil))
        case (let forecast?, let warning?):
          // A cached forecast is still worth showing; the error travels with it as the
          // banner's warning instead of being thrown (or silently dropped).
          continuation.resume(returning: (forecast, warning as? ForecastError))
        case (nil, let error?):
          continuation.resume(throwing: error)
        case (nil, nil):
          // "Cannot happen", and does: without this case the screen would load forever.
          continuation.resume(throwing: EmptyForecast())
        }
      }
    }
  }

  /// The progress-and-completion style: progress is passed through, and only the
  /// completion, which comes exactly once and after every progress call, resumes. A `nil`
  /// map is an answer ("no radar here"), not an error.
  func radarMap(
    of city: String, progress: @escaping @Sendable (Double) -> Void
  ) async -> RadarMap? {
    await withCheckedContinuation { continuation in
      radarMap(of: city, progress: progress) { map in
        continuation.resume(returning: map)
      }
    }
  }
}
