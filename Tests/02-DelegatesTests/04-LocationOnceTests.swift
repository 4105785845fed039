import LegacyKit
import Testing
import WorkbookTesting

@testable import Delegates

private let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(100))]
/// The same, and a manager that makes every report twice.
private let scriptsAndTwice = scripts + [.twice]

private let museum = Location(latitude: 51.5194, longitude: -0.1270)
private let bridge = Location(latitude: 51.5055, longitude: -0.0754)
private let station = Location(latitude: 51.5320, longitude: -0.1233)

private let locationHint =
  "the first didUpdateLocations must resume the stored continuation; is your delegate still "
  + "alive? The manager holds it weakly, so a delegate nothing else holds is gone before "
  + "the manager reports"
private let askHint =
  "while the status is .notDetermined, ask with requestWhenInUseAuthorization() and wait "
  + "for the next locationManagerDidChangeAuthorization; is your delegate still alive when "
  + "the user answers? The manager holds it weakly"
private let deniedHint =
  "a .denied or .restricted status must resume the stored continuation by throwing "
  + "LocationPermissionError"
private let failureHint =
  "locationManager(_:didFailWithError:) must resume the stored continuation by throwing the "
  + "error; it is an optional delegate method, so the compiler never asked for it"

@Suite("2.4 Location, once")
struct LocationOnceTests {
  @Test("Asks the user when nobody has asked yet, and waits for their answer", arguments: scripts)
  func asksAndWaitsForTheAnswer(script: CallbackScript) async throws {
    let manager = LocationManager(
      authorization: .notDetermined, userAnswer: .authorizedWhenInUse,
      updates: [.location(museum)], script: script)

    let location = try await withDeadline(.seconds(2), "currentLocation(using:)", hint: askHint) {
      try await currentLocation(using: manager)
    }
    let stopped = await eventually { !manager.isUpdatingLocation }

    #expect(location == museum)
    #expect(manager.authorizationRequestCount >= 1, "the user must be asked")
    #expect(stopped, "updates must be stopped once the caller has its location")
  }

  @Test("Throws denied when the user says no", arguments: scripts)
  func throwsWhenTheUserSaysNo(script: CallbackScript) async throws {
    let manager = LocationManager(
      authorization: .notDetermined, userAnswer: .denied, updates: [.location(museum)],
      script: script)

    await #expect(throws: LocationPermissionError.denied) {
      try await withDeadline(.seconds(2), "currentLocation(using:)", hint: deniedHint) {
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
      authorization: status, userAnswer: .authorizedWhenInUse, updates: [.location(museum)],
      script: .default)

    await #expect(throws: expected) {
      try await withDeadline(.seconds(2), "currentLocation(using:)", hint: deniedHint) {
        try await currentLocation(using: manager)
      }
    }
    #expect(manager.startCount == 0, "updates must not be started without permission")
  }

  @Test("Keeps its delegate alive while the user takes their time, and lets it go after")
  func keepsTheDelegateAliveWhileWaiting() async throws {
    let manager = LocationManager(
      authorization: .notDetermined, userAnswer: .authorizedWhenInUse,
      updates: [.location(bridge)], script: .later(.milliseconds(300)))

    let location = try await withDeadline(.seconds(2), "currentLocation(using:)", hint: askHint) {
      try await currentLocation(using: manager)
    }
    let released = await eventually { manager.delegate == nil }

    #expect(location == bridge)
    #expect(
      released,
      "the delegate outlived currentLocation(using:): let it go once the caller is answered")
  }

  /// The tests in which more reports follow the one that answers the caller. A wrong answer
  /// crashes them, so they run one at a time and a crash names a single test.
  @Suite("Later reports", .serialized)
  struct LaterReports {
    @Test(
      "Returns the first location when the user has already allowed it, and ignores the rest",
      arguments: scriptsAndTwice)
    func returnsTheFirstLocation(script: CallbackScript) async throws {
      let manager = LocationManager(
        authorization: .authorizedWhenInUse, userAnswer: nil,
        updates: [.location(museum), .location(bridge), .location(station)], script: script)

      let location = try await withDeadline(
        .seconds(2), "currentLocation(using:)", hint: locationHint
      ) {
        try await currentLocation(using: manager)
      }
      // The later updates were already on their way. Wait until the manager has made every
      // report, so that resuming again for one of them happens while this test is running.
      let quiet = await eventually { manager.pendingReportCount == 0 }
      let stopped = await eventually { !manager.isUpdatingLocation }

      #expect(location == museum, "the first location is the answer; later ones are ignored")
      #expect(quiet, "the manager's later reports did not finish")
      #expect(stopped, "updates must be stopped once the caller has its location")
      #expect(manager.authorizationRequestCount == 0, "the user has already said yes")
    }

    @Test(
      "Throws the manager's error when locating fails, and ignores what follows",
      arguments: scriptsAndTwice)
    func throwsTheManagersError(script: CallbackScript) async throws {
      let manager = LocationManager(
        authorization: .authorizedWhenInUse, userAnswer: nil,
        updates: [.failure(.locationUnavailable), .location(museum)], script: script)

      await #expect(throws: LocationError.locationUnavailable) {
        try await withDeadline(.seconds(2), "currentLocation(using:)", hint: failureHint) {
          try await currentLocation(using: manager)
        }
      }
      let quiet = await eventually { manager.pendingReportCount == 0 }
      let stopped = await eventually { !manager.isUpdatingLocation }

      #expect(quiet, "the manager's later reports did not finish")
      #expect(stopped, "updates must be stopped once the caller has been answered")
    }

    @Test(
      "Answers once when the manager repeats every report, whatever the user answers",
      arguments: [AuthorizationStatus.authorizedWhenInUse, .denied])
    func answersOnceWhenEveryReportComesTwice(answer: AuthorizationStatus) async throws {
      let manager = LocationManager(
        authorization: .notDetermined, userAnswer: answer,
        updates: [.location(museum), .location(bridge)], script: .twice)

      let outcome = try await withDeadline(
        .seconds(2), "currentLocation(using:)", hint: answer == .denied ? deniedHint : askHint
      ) {
        do {
          return Result<Location, any Error>.success(try await currentLocation(using: manager))
        } catch {
          return .failure(error)
        }
      }
      let quiet = await eventually { manager.pendingReportCount == 0 }

      if answer == .denied {
        #expect(throws: LocationPermissionError.denied) { try outcome.get() }
        #expect(manager.startCount == 0, "updates must not be started without permission")
      } else {
        #expect(try outcome.get() == museum)
        #expect(!manager.isUpdatingLocation, "updates must be stopped")
      }
      #expect(quiet, "the manager's later reports did not finish")
    }
  }
}
