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
    // TODO: Implement this with async/await instead of `loadWeatherScreen` (whose widget
    // callers keep it as it is). The SDK may call any of its handlers on any thread,
    // including inside the call; the model's state belongs to the main actor, and refresh()
    // must not block it. Say in comments why each part of your answer is safe.
  }
}
