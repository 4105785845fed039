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
/// manager's own error when locating fails.
func currentLocation(using manager: LocationManager) async throws -> Location {
  // TODO: Follow the flow above: ask for permission only if nobody has asked yet, answer
  // once, with the first location or the first failure, and stop updating. The manager holds
  // its delegate weakly, and two calls may overlap on one manager.
  throw Unfinished()
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
