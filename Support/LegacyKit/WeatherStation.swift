import Dispatch
import Foundation

/// One temperature reading from a ``WeatherStation``.
public struct WeatherReading: Sendable, Equatable, CustomStringConvertible {
  public var city: String
  public var celsius: Double

  public init(city: String, celsius: Double) {
    self.city = city
    self.celsius = celsius
  }

  public var description: String { "\(city): \(celsius) °C" }
}

/// Why a ``WeatherStation`` could not answer.
public enum WeatherStationError: Error, Equatable, Sendable {
  /// The station has no sensor in that city.
  case unknownCity(String)
  /// The station is unreachable; every request fails until it is back online.
  case offline
}

/// A weather client from the completion-handler era, shipped in a binary SDK: its
/// source cannot be changed, and plenty of existing code calls it.
///
/// It is thread-safe (its documentation promises so), answers each request exactly once,
/// and can be asked any number of times, from any thread, even while earlier requests are
/// still in flight. When and where the answer arrives is up to `script`.
public final class WeatherStation: @unchecked Sendable {
  private let lock = NSLock()
  private var readings: [String: Double]
  private var _isOnline = true
  private var _script: CallbackScript
  private var _requestCount = 0

  /// - Parameters:
  ///   - readings: The temperature, in degrees Celsius, the station reports for each city.
  ///   - script: When and on which thread the completion handler runs. Its `times` must be 1:
  ///     this station always answers exactly once.
  public init(readings: [String: Double], script: CallbackScript = .default) {
    precondition(script.times == 1, "a WeatherStation answers every request exactly once")
    self.readings = readings
    self._script = script
  }

  /// Whether the station can be reached. While it is offline every request fails.
  public var isOnline: Bool {
    get { lock.withLock { _isOnline } }
    set { lock.withLock { _isOnline = newValue } }
  }

  /// How many requests the station has received, through any API.
  public var requestCount: Int { lock.withLock { _requestCount } }

  /// Asks for the current temperature in `city`.
  ///
  /// - Parameter completion: Called exactly once with the reading, or with
  ///   ``WeatherStationError/unknownCity(_:)`` or ``WeatherStationError/offline``.
  ///   Where it runs depends on the station's script: often a background queue.
  public func currentReading(
    for city: String,
    completion: @escaping (Result<WeatherReading, WeatherStationError>) -> Void
  ) {
    let (script, result): (CallbackScript, Result<WeatherReading, WeatherStationError>) =
      lock.withLock {
        _requestCount += 1
        if !_isOnline { return (_script, .failure(.offline)) }
        guard let celsius = readings[city] else { return (_script, .failure(.unknownCity(city))) }
        return (_script, .success(WeatherReading(city: city, celsius: celsius)))
      }
    script.deliver { completion(result) }
  }
}
