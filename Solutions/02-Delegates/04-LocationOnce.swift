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
/// Throws `LocationPermissionError` when permission is denied or restricted, and the
/// manager's own error when locating fails. Calls that overlap on one manager share its
/// answer: the manager has one delegate, and the later call answers the earlier one too.
func currentLocation(using manager: LocationManager) async throws -> Location {
  // The manager holds its delegate weakly, so something must hold the request for as long
  // as the caller waits. Calling a method on it does: `request` stays alive until `run()`
  // returns, and is released right after.
  let request = LocationRequest(manager: manager)
  return try await request.run()
}

/// One request for one location: the delegate that drives the authorization flow and
/// resumes the caller with the first location or failure.
private final class LocationRequest: LocationManagerDelegate, Sendable {
  private let manager: LocationManager
  /// The waiting caller; `nil` before `run()` and once the caller has been answered.
  private let waiting = Mutex<CheckedContinuation<Location, any Error>?>(nil)
  /// The request that was the manager's delegate when this one took its place, if any: the
  /// manager reports to one delegate only, so that request hears our answer from us.
  private let replaced = Mutex<LocationRequest?>(nil)

  init(manager: LocationManager) {
    self.manager = manager
  }

  func run() async throws -> Location {
    try await withCheckedThrowingContinuation { continuation in
      // Store first: the manager reports its status as soon as the delegate is set, and for
      // a synchronous script that is inside the assignment below.
      waiting.withLock { $0 = continuation }
      // Another call may be waiting on this manager already. Once we are the delegate, its
      // request never hears another word: take it along, and answer it when we are answered.
      let previous = manager.delegate as? LocationRequest
      replaced.withLock { $0 = previous }
      manager.delegate = self
    }
  }

  func locationManagerDidChangeAuthorization(_ manager: LocationManager) {
    // The caller may have been answered already (a repeated report): then do nothing, or
    // updates would be started again with nobody left to stop them.
    guard waiting.withLock({ $0 != nil }) else { return }
    switch manager.authorizationStatus {
    case .notDetermined:
      // Not an answer yet: the first report comes before anyone has asked the user. Ask,
      // and wait for the next report.
      manager.requestWhenInUseAuthorization()
    case .authorizedWhenInUse, .authorizedAlways:
      manager.startUpdatingLocation()
    case .denied:
      finish(.failure(LocationPermissionError.denied))
    case .restricted:
      finish(.failure(LocationPermissionError.restricted))
    }
  }

  func locationManager(_ manager: LocationManager, didUpdateLocations locations: [Location]) {
    // The last location of a report is the most recent one.
    guard let latest = locations.last else { return }
    finish(.success(latest))
  }

  func locationManager(_ manager: LocationManager, didFailWithError error: any Error) {
    finish(.failure(error))
  }

  /// Answers the caller once. Later reports find the continuation gone and change nothing.
  private func finish(_ result: Result<Location, any Error>) {
    guard let continuation = waiting.withLock({ $0.take() }) else { return }
    // Stop before resuming, so the caller never sees updates still running; and stop
    // listening, so reports already on their way are not even delivered.
    manager.stopUpdatingLocation()
    manager.delegate = nil
    continuation.resume(with: result)
    replaced.withLock { $0.take() }?.answer(result)
  }

  /// Answers a request whose place as the delegate was taken, and the one it replaced in
  /// turn. The manager is no longer its business: it is not told anything.
  private func answer(_ result: Result<Location, any Error>) {
    waiting.withLock { $0.take() }?.resume(with: result)
    replaced.withLock { $0.take() }?.answer(result)
  }
}
