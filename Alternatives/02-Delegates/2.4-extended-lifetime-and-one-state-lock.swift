import LegacyKit
import Synchronization

// The delegate way, in a view controller that wants to know where the user is, once:
//
//     func findMeTapped() {
//       manager.delegate = self  // reports the authorization status
//     }
//     func locationManagerDidChangeAuthorization(_ manager: LocationManager) {
//       switch manager.authorizationStatus {
//       case .notDetermined: manager.requestWhenInUseAuthorization()
//       case .authorizedWhenInUse, .authorizedAlways: manager.startUpdatingLocation()
//       case .denied, .restricted: showPermissionAlert()
//       }
//     }
//     func locationManager(_ manager: LocationManager, didUpdateLocations locations: [Location]) {
//       manager.stopUpdatingLocation()
//       show(locations.last!)
//     }
//     func locationManager(_ manager: LocationManager, didFailWithError error: Error) {
//       showError(error)
//     }

/// Why `currentLocation(using:)` may not locate the user.
enum LocationPermissionError: Error, Equatable {
  /// The user said no, now or earlier.
  case denied
  /// A device policy forbids locating the user.
  case restricted
}

/// Returns where the user is now, asking for permission first if nobody has asked yet.
///
/// The request's delegate methods are driven from a continuation made here, and
/// `withExtendedLifetime` keeps the request alive for the whole wait. Calls that overlap on one manager share its answer.
func currentLocation(using manager: LocationManager) async throws -> Location {
  let request = LocationRequest(manager: manager)
  // Nothing uses `request` after the closure below; this keeps it alive until we return.
  defer { withExtendedLifetime(request) {} }
  return try await withCheckedThrowingContinuation { continuation in
    request.start(continuation)
  }
}

private final class LocationRequest: LocationManagerDelegate, Sendable {
  private struct State {
    var waiting: CheckedContinuation<Location, any Error>?
    var replaced: LocationRequest?
  }

  private let manager: LocationManager
  private let state = Mutex(State())

  init(manager: LocationManager) {
    self.manager = manager
  }

  func start(_ continuation: CheckedContinuation<Location, any Error>) {
    let previous = manager.delegate as? LocationRequest
    state.withLock { $0 = State(waiting: continuation, replaced: previous) }
    manager.delegate = self
  }

  func locationManagerDidChangeAuthorization(_ manager: LocationManager) {
    guard state.withLock({ $0.waiting != nil }) else { return }
    switch manager.authorizationStatus {
    case .notDetermined: manager.requestWhenInUseAuthorization()
    case .authorizedWhenInUse, .authorizedAlways: manager.startUpdatingLocation()
    case .denied: finish(.failure(LocationPermissionError.denied))
    case .restricted: finish(.failure(LocationPermissionError.restricted))
    }
  }

  func locationManager(_ manager: LocationManager, didUpdateLocations locations: [Location]) {
    if let latest = locations.last { finish(.success(latest)) }
  }

  func locationManager(_ manager: LocationManager, didFailWithError error: any Error) {
    finish(.failure(error))
  }

  private func finish(_ result: Result<Location, any Error>) {
    guard state.withLock({ $0.waiting != nil }) else { return }
    manager.stopUpdatingLocation()
    manager.delegate = nil
    answer(result)
  }

  /// Resumes this request's caller, then the caller of the request it replaced, and so on.
  private func answer(_ result: Result<Location, any Error>) {
    let (continuation, replaced) = state.withLock { state in
      defer { state = State() }
      return (state.waiting, state.replaced)
    }
    continuation?.resume(with: result)
    replaced?.answer(result)
  }
}
