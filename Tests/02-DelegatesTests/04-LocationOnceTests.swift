import LegacyKit
import Testing
import WorkbookTesting

@testable import Delegates

@Suite("2.4 Location, once")
struct LocationOnceTests {
  static let scripts: [CallbackScript] = [
    .synchronously, .default, .later(.milliseconds(100)), .twice,
  ]

  static let museum = Location(latitude: 51.5194, longitude: -0.1270)
  static let bridge = Location(latitude: 51.5055, longitude: -0.0754)
  static let station = Location(latitude: 51.5320, longitude: -0.1233)

  static let locationHint =
    "the first didUpdateLocations must resume the stored continuation; is your delegate "
    + "still alive? The manager holds it weakly, so a delegate nothing else holds is gone "
    + "before the manager reports"
  static let askHint =
    "while the status is .notDetermined, ask with requestWhenInUseAuthorization() and wait "
    + "for the next locationManagerDidChangeAuthorization; is your delegate still alive "
    + "when the user answers? The manager holds it weakly"
  static let deniedHint =
    "a .denied or .restricted status must resume the stored continuation by throwing "
    + "LocationPermissionError"
  static let failureHint =
    "locationManager(_:didFailWithError:) must resume the stored continuation by throwing "
    + "the error; it is an optional delegate method, so the compiler never asked for it"

  @Test("Returns the first location when the user has already allowed it", arguments: scripts)
  func returnsTheFirstLocation(script: CallbackScript) async throws {
    let manager = LocationManager(
      authorization: .authorizedWhenInUse, userAnswer: nil,
      updates: [.location(Self.museum), .location(Self.bridge), .location(Self.station)],
      script: script)

    let location = try await withDeadline(
      .seconds(2), "currentLocation(using:)", hint: Self.locationHint
    ) {
      try await currentLocation(using: manager)
    }
    // The later updates were already on their way; wait until they have all been reported,
    // so that resuming again for one of them happens while this test is running.
    let allReported = await eventually { manager.updateReportCount >= 3 * script.times }
    let stopped = await eventually { !manager.isUpdatingLocation }

    #expect(location == Self.museum, "the first location is the answer; later ones are ignored")
    #expect(allReported, "the manager's later updates were not all reported")
    #expect(stopped, "updates must be stopped once the caller has its location")
    #expect(manager.authorizationRequestCount == 0, "the user has already said yes")
  }

  @Test(
    "Asks the user when nobody has asked yet, and waits for their answer", arguments: scripts)
  func asksAndWaitsForTheAnswer(script: CallbackScript) async throws {
    let manager = LocationManager(
      authorization: .notDetermined, userAnswer: .authorizedWhenInUse,
      updates: [.location(Self.museum), .location(Self.bridge)], script: script)

    let location = try await withDeadline(
      .seconds(2), "currentLocation(using:)", hint: Self.askHint
    ) {
      try await currentLocation(using: manager)
    }
    let stopped = await eventually { !manager.isUpdatingLocation }

    #expect(location == Self.museum)
    #expect(manager.authorizationRequestCount >= 1, "the user must be asked")
    #expect(stopped, "updates must be stopped once the caller has its location")
  }

  @Test("Throws denied when the user says no", arguments: scripts)
  func throwsWhenTheUserSaysNo(script: CallbackScript) async throws {
    let manager = LocationManager(
      authorization: .notDetermined, userAnswer: .denied, updates: [.location(Self.museum)],
      script: script)

    await #expect(throws: LocationPermissionError.denied) {
      try await withDeadline(.seconds(2), "currentLocation(using:)", hint: Self.deniedHint) {
        try await currentLocation(using: manager)
      }
    }
    #expect(manager.authorizationRequestCount >= 1, "the user must be asked")
    #expect(manager.startCount == 0, "updates must not be started without permission")
  }

  @Test(
    "Throws at once when permission was denied or restricted before",
    arguments: [
      (AuthorizationStatus.denied, LocationPermissionError.denied),
      (AuthorizationStatus.restricted, LocationPermissionError.restricted),
    ])
  func throwsWhenPermissionIsMissing(
    status: AuthorizationStatus, expected: LocationPermissionError
  ) async throws {
    let manager = LocationManager(
      authorization: status, userAnswer: .authorizedWhenInUse,
      updates: [.location(Self.museum)], script: .default)

    await #expect(throws: expected) {
      try await withDeadline(.seconds(2), "currentLocation(using:)", hint: Self.deniedHint) {
        try await currentLocation(using: manager)
      }
    }
    #expect(manager.startCount == 0, "updates must not be started without permission")
  }

  @Test("Throws the manager's error when locating fails", arguments: scripts)
  func throwsTheManagersError(script: CallbackScript) async throws {
    let manager = LocationManager(
      authorization: .authorizedWhenInUse, userAnswer: nil,
      updates: [.failure(.locationUnavailable), .location(Self.museum)], script: script)

    await #expect(throws: LocationError.locationUnavailable) {
      try await withDeadline(.seconds(2), "currentLocation(using:)", hint: Self.failureHint) {
        try await currentLocation(using: manager)
      }
    }
    let allReported = await eventually { manager.updateReportCount >= 2 * script.times }
    let stopped = await eventually { !manager.isUpdatingLocation }

    #expect(allReported, "the manager's later updates were not all reported")
    #expect(stopped, "updates must be stopped once the caller has been answered")
  }

  @Test("Keeps its delegate alive while the user takes their time, and lets it go after")
  func keepsTheDelegateAliveWhileWaiting() async throws {
    let manager = LocationManager(
      authorization: .notDetermined, userAnswer: .authorizedWhenInUse,
      updates: [.location(Self.bridge)], script: .later(.milliseconds(300)))

    let location = try await withDeadline(
      .seconds(2), "currentLocation(using:)", hint: Self.askHint
    ) {
      try await currentLocation(using: manager)
    }
    let released = await eventually { manager.delegate == nil }

    #expect(location == Self.bridge)
    #expect(
      released,
      "the delegate outlived currentLocation(using:): let it go once the caller is answered")
  }
}
