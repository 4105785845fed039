import Foundation

/// The sky over one city right now, as ``ForecastClient`` reports it.
public struct SkyConditions: Equatable, Sendable {
  public var city: String
  public var celsius: Double
  public var summary: String
  /// The weather station that measured it. Forecasts are asked for by station, not by city.
  public var stationID: String

  public init(city: String, celsius: Double, summary: String, stationID: String) {
    self.city = city
    self.celsius = celsius
    self.summary = summary
    self.stationID = stationID
  }
}

/// One day of a forecast.
public struct DayForecast: Equatable, Sendable {
  public var day: Int
  public var high: Double
  public var low: Double

  public init(day: Int, high: Double, low: Double) {
    self.day = day
    self.high = high
    self.low = low
  }
}

/// A rain radar map, downloaded in pieces.
public struct RadarMap: Equatable, Sendable {
  public var city: String
  public var frames: Int

  public init(city: String, frames: Int) {
    self.city = city
    self.frames = frames
  }
}

/// The errors ``ForecastClient`` reports.
public enum ForecastError: Error, Equatable, Sendable {
  /// No weather station covers that city.
  case unknownCity(String)
  /// No forecast exists for that station.
  case unknownStation(String)
  /// The forecast service cannot be reached.
  case offline
  /// Sent together with a forecast from the SDK's cache: usable, but possibly out of date.
  case stale
}

/// A weather SDK from three different teams and three different years, and it shows: each
/// of its calls answers in a callback style of its own.
///
/// - ``currentConditions(in:completion:)`` answers with a `Result`.
/// - ``forecast(forStation:days:completion:)`` answers Objective-C style, `([DayForecast]?,
///   Error?)`: a forecast, an error, both (a cached forecast and ``ForecastError/stale``), or,
///   on a bad day, neither.
/// - ``radarMap(of:progress:completion:)`` reports its download's progress zero or more times,
///   then the map, or `nil` when there is no radar for that city (not an error).
///
/// Every handler is an ordinary closure, called exactly once per request (progress: any number
/// of times, always before the completion) on whichever thread the call's script chooses:
/// often a background queue, sometimes inside the call itself. The client is thread-safe,
/// records every request and delivery in ``events``, and serves any number of requests.
public final class ForecastClient: @unchecked Sendable {
  /// Which arguments the forecast handler receives.
  public enum ForecastReply: Sendable, CustomStringConvertible {
    /// `(days, nil)`.
    case value
    /// `(nil, error)`.
    case error(ForecastError)
    /// `(days, error)`: the cached forecast and a warning about it.
    case valueAndError(ForecastError)
    /// `(nil, nil)`.
    case neither

    public var description: String {
      switch self {
      case .value: return "(forecast, nil)"
      case .error(let error): return "(nil, \(error))"
      case .valueAndError(let error): return "(forecast, \(error))"
      case .neither: return "(nil, nil)"
      }
    }
  }

  /// Something that happened to the client, in the order it happened.
  public enum Event: Equatable, Sendable, CustomStringConvertible {
    case conditionsRequested(city: String)
    case forecastRequested(station: String, days: Int)
    case radarRequested(city: String)
    case radarDelivered(city: String)

    public var description: String {
      switch self {
      case .conditionsRequested(let city): return "conditions in \(city) requested"
      case .forecastRequested(let station, let days):
        return "\(days)-day forecast of station \(station) requested"
      case .radarRequested(let city): return "radar of \(city) requested"
      case .radarDelivered(let city): return "radar of \(city) delivered"
      }
    }
  }

  private let lock = NSLock()
  private let conditions: [String: SkyConditions]
  private let forecasts: [String: [DayForecast]]
  private let radarMaps: [String: RadarMap]
  private var _forecastReply: ForecastReply = .value
  private var _radarProgress: [Double] = [0.25, 0.5, 1]
  private var _isOnline = true
  private var _events: [Event] = []
  private let conditionsScript: CallbackScript
  private let forecastScript: CallbackScript
  private let radarScript: CallbackScript

  /// - Parameters:
  ///   - conditions: What each city's sky is like.
  ///   - forecasts: Each station's forecast, longest first; a request gets its first `days`.
  ///   - radarMaps: The cities that have a radar map.
  ///   - conditionsScript, forecastScript, radarScript: When and on which thread each call
  ///     answers. Their `times` must be 1: every request is answered exactly once.
  public init(
    conditions: [SkyConditions],
    forecasts: [String: [DayForecast]],
    radarMaps: [RadarMap],
    conditionsScript: CallbackScript = .default,
    forecastScript: CallbackScript = .default,
    radarScript: CallbackScript = .default
  ) {
    for script in [conditionsScript, forecastScript, radarScript] {
      precondition(script.times == 1, "a ForecastClient answers every request exactly once")
    }
    var byCity: [String: SkyConditions] = [:]
    for sky in conditions { byCity[sky.city] = sky }
    var maps: [String: RadarMap] = [:]
    for map in radarMaps { maps[map.city] = map }
    self.conditions = byCity
    self.forecasts = forecasts
    self.radarMaps = maps
    self.conditionsScript = conditionsScript
    self.forecastScript = forecastScript
    self.radarScript = radarScript
  }

  /// The shape of answer the next forecast request gets; it may change between requests.
  public var forecastReply: ForecastReply {
    get { lock.withLock { _forecastReply } }
    set { lock.withLock { _forecastReply = newValue } }
  }

  /// The progress values the next radar download reports before its completion, in order
  /// (none at all is allowed: a map already cached arrives without progress).
  public var radarProgress: [Double] {
    get { lock.withLock { _radarProgress } }
    set { lock.withLock { _radarProgress = newValue } }
  }

  /// Whether the service can be reached. While it is offline every call fails, except the
  /// radar, which then has no map (`nil`).
  public var isOnline: Bool {
    get { lock.withLock { _isOnline } }
    set { lock.withLock { _isOnline = newValue } }
  }

  /// Every request and radar delivery so far, oldest first.
  public var events: [Event] { lock.withLock { _events } }

  /// Asks for the sky over `city` right now.
  ///
  /// - Parameter completion: Called exactly once with the conditions, or with
  ///   ``ForecastError/unknownCity(_:)`` or ``ForecastError/offline``.
  public func currentConditions(
    in city: String, completion: @escaping (Result<SkyConditions, ForecastError>) -> Void
  ) {
    lock.lock()
    _events.append(.conditionsRequested(city: city))
    let result: Result<SkyConditions, ForecastError>
    if !_isOnline {
      result = .failure(.offline)
    } else if let sky = conditions[city] {
      result = .success(sky)
    } else {
      result = .failure(.unknownCity(city))
    }
    lock.unlock()
    conditionsScript.deliver { completion(result) }
  }

  /// Asks for the next `days` days' forecast of the station `stationID`.
  ///
  /// - Parameter completion: Called exactly once with `(forecast, nil)`, `(nil, error)`,
  ///   `(cached forecast, ForecastError.stale)` or `(nil, nil)`, as ``forecastReply`` says.
  ///   An unknown station gets `(nil, ForecastError.unknownStation)`; offline, `(nil,
  ///   ForecastError.offline)`.
  public func forecast(
    forStation stationID: String, days: Int,
    completion: @escaping ([DayForecast]?, Error?) -> Void
  ) {
    lock.lock()
    _events.append(.forecastRequested(station: stationID, days: days))
    let reply = _forecastReply
    let online = _isOnline
    lock.unlock()
    let found = forecasts[stationID].map { Array($0.prefix(days)) }
    forecastScript.deliver {
      guard online else { return completion(nil, ForecastError.offline) }
      guard let found else { return completion(nil, ForecastError.unknownStation(stationID)) }
      switch reply {
      case .value: completion(found, nil)
      case .error(let error): completion(nil, error)
      case .valueAndError(let error): completion(found, error)
      case .neither: completion(nil, nil)
      }
    }
  }

  /// Downloads the rain radar map of `city`.
  ///
  /// - Parameters:
  ///   - progress: Called with the fraction downloaded so far, zero or more times, in
  ///     increasing order, always before `completion`, on the same thread as `completion`.
  ///   - completion: Called exactly once with the map, or `nil` when the city has no radar.
  public func radarMap(
    of city: String, progress: @escaping (Double) -> Void,
    completion: @escaping (RadarMap?) -> Void
  ) {
    lock.lock()
    _events.append(.radarRequested(city: city))
    let steps = _radarProgress
    let map = _isOnline ? radarMaps[city] : nil
    lock.unlock()
    radarScript.deliver {
      for step in steps { progress(step) }
      self.lock.withLock { self._events.append(.radarDelivered(city: city)) }
      completion(map)
    }
  }
}
