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
/// The likely cause when nobody was answered after the user was asked: the answer reached
/// no delegate, or was never acted on, when the manager saw that; or else `hint`.
func locationCause(_ manager: LocationManager, otherwise hint: String) -> String {
  if manager.reportsWithNoDelegate > 0 {
    return "the manager reported the user's answer (or a status) while it had no delegate, "
      + "so nobody heard it: permission was asked before a delegate was set, or the "
      + "delegate had been freed by then (the manager holds it weakly)"
  }
  if manager.authorizationRequestCount > 0, manager.startCount == 0 {
    return "the user was asked and allowed location, but updates never started: the "
      + "answer comes as the next locationManagerDidChangeAuthorization, which must start "
      + "updates (every status report counts, not only the first)"
  }
  return hint
}

/// ``locationCause(_:otherwise:)`` with the hint about asking, worked out at the deadline.
private func askCause(_ manager: LocationManager) -> @Sendable () -> String {
  { locationCause(manager, otherwise: askHint) }
}
private let storeFirstHint =
  "setting the delegate makes the manager report its status at once, here inside the "
  + "assignment, and your continuation was not stored yet, so the report found nobody to "
  + "answer; store or subscribe before you start: store the continuation first, then set "
  + "the delegate"
private let replacedHint =
  "the second call made its own object the manager's delegate, and the manager reports to "
  + "one delegate only, so the first call's delegate never hears another word; before you "
  + "take its place, take the waiting request along and give it the same answer as yours"
private let deniedHint =
  "a .denied or .restricted status must resume the stored continuation by throwing "
  + "LocationPermissionError"
private let failureHint =
  "locationManager(_:didFailWithError:) must resume the stored continuation by throwing the "
  + "error; it is an optional delegate method, so the compiler never asked for it"

/// The contract of `currentLocation(using:)`: each path, what the caller and the manager see,
/// and the test that checks it (— where a column does not apply, and why). Tests whose name
/// is in the contract file are in `04-LocationOnceContractTests.swift`.
///
/// | path | result, error | manager (updates, delegate) | thread, timing |
/// | --- | --- | --- | --- |
/// | allowed before | the first location, the rest ignored: `returnsTheFirstLocation` | stored before the delegate is set: `storesBeforeSettingTheDelegate`; updates stopped before the caller is resumed: `stoppedBeforeTheCallerGoesOn`; delegate let go before the caller is resumed: `letsGoOfTheManagerBeforeTheCallerGoesOn` | answered while the manager reports: `stoppedBeforeTheCallerGoesOn` |
/// | not determined, the user allows | the first location: `asksAndWaitsForTheAnswer` | asked, stopped: `asksAndWaitsForTheAnswer` (asked twice is not checked: the system shows one prompt either way); an answer reported while no delegate was set is named as the cause (`LocationManager.reportsWithNoDelegate`) | — |
/// | allowed always, before or as the answer | the first location: `allowedAlways` | — | — |
/// | not determined, the user says no | `.denied`: `throwsWhenTheUserSaysNo` | no updates: `throwsWhenTheUserSaysNo` | — |
/// | denied or restricted before | `.denied` / `.restricted`: `throwsWhenPermissionIsMissing` | no updates: `throwsWhenPermissionIsMissing` | — |
/// | locating fails | the manager's error, later reports ignored: `throwsTheManagersError` | — | — |
/// | every report repeated | one resume: `answersOnceWhenEveryReportComesTwice` | — | — |
/// | the user takes their time | the location: `keepsTheDelegateAliveWhileWaiting` | the delegate lives while the caller waits, and is let go after: `keepsTheDelegateAliveWhileWaiting` | — |
/// | a second call while the first waits | both answered: `aSecondCallAnswersBothCallers` | — | — |
/// | three calls overlapping | all three answered: `everyReplacedCallerIsAnswered` | updates stopped: `everyReplacedCallerIsAnswered` | — |
/// | cancelled task (before, during, after) | — currentLocation(using:) promises nothing for a cancelled task | | |
@Suite("2.4 Location, once")
struct LocationOnceTests {
  // First in the file on purpose: when several tests fail, the runner shows the first one,
  // and this one tells "stored too late" apart from "never resumed at all".
  @Test("Stores the continuation before setting the delegate: the manager reports at once")
  func storesBeforeSettingTheDelegate() async throws {
    // A manager that reports later works even if the continuation is stored after the
    // delegate is set...
    let later = LocationManager(
      authorization: .authorizedWhenInUse, userAnswer: nil, updates: [.location(museum)],
      script: .later(.milliseconds(300)))
    let first = try await withDeadline(
      .seconds(2), "currentLocation(using:)", hint: locationHint
    ) {
      try await currentLocation(using: later)
    }
    #expect(first == museum, "the manager's first location is \(museum)")

    // ...but one that reports inside the assignment finds nobody to answer.
    let atOnce = LocationManager(
      authorization: .authorizedWhenInUse, userAnswer: nil, updates: [.location(bridge)],
      script: .synchronously)
    let second = try await withDeadline(
      .seconds(2), "currentLocation(using:) with a manager that reports at once",
      hint: storeFirstHint
    ) {
      try await currentLocation(using: atOnce)
    }
    #expect(second == bridge, "the manager's first location is \(bridge)")
  }

  @Test("Updates have stopped by the time the caller is resumed with its location")
  func stoppedBeforeTheCallerGoesOn() async throws {
    let watch = ResumeWatch()
    let manager = LocationManager(
      authorization: .authorizedWhenInUse, userAnswer: nil,
      updates: [.location(museum), .location(bridge)], script: watch.reportScript)

    let (results, _, outside) = try await resumedInsideTheReport(
      "currentLocation(using:)", hint: locationHint, watch: watch,
      look: { manager.isUpdatingLocation ? "still updating" : "stopped" }
    ) {
      try await currentLocation(using: manager)
    }

    let location = try results.first?.get()
    #expect(
      location == museum,
      "currentLocation(using:) returned \(String(describing: location)), not the manager's first location \(museum)"
    )
    #expect(
      outside == 0, resumedAfterTheReport("currentLocation(using:)", outside: outside))
    #expect(
      !watch.seen.contains("still updating"),
      """
      the caller was resumed while the manager was still updating (\(watch.seen)): the \
      location was handed over first and updates stopped only afterwards, so a caller that \
      goes on at once (or asks again) finds the manager still running, using power and \
      reporting locations nobody waits for. Updates must be stopped before the caller goes on
      """)
  }

  /// What `currentLocation(using:)` returned or threw, within the deadline that names the
  /// ask's likely cause when it never returns.
  private func locationOutcome(
    _ manager: LocationManager
  ) async throws -> Result<Location, any Error> {
    try await withDeadline(.seconds(2), "currentLocation(using:)", likelyCause: askCause(manager)) {
      do {
        return .success(try await currentLocation(using: manager))
      } catch {
        return .failure(error)
      }
    }
  }

  @Test("Asks the user when nobody has asked yet, and waits for their answer", arguments: scripts)
  func asksAndWaitsForTheAnswer(script: CallbackScript) async throws {
    let manager = LocationManager(
      authorization: .notDetermined, userAnswer: .authorizedWhenInUse,
      updates: [.location(museum)], script: script)

    let outcome = try await locationOutcome(manager)
    let stopped = await eventually { !manager.isUpdatingLocation }

    if case .failure(let error) = outcome {
      Issue.record(
        Comment(
          rawValue:
            "currentLocation(using:) threw \(error) before the user had answered: the first "
            + "status report says .notDetermined, which is not an answer; ask with "
            + "requestWhenInUseAuthorization(), and neither throw nor start updates until the "
            + "next status report"))
    }
    let location = try? outcome.get()
    #expect(location == museum, "currentLocation(using:) must return the manager's first location")
    #expect(manager.authorizationRequestCount >= 1, "the user must be asked")
    #expect(stopped, "updates must be stopped once the caller has its location")
  }

  @Test(
    "Permission to locate always will do as well, given before or as the user's answer",
    arguments: [AuthorizationStatus.authorizedAlways, .notDetermined])
  func allowedAlways(before status: AuthorizationStatus) async throws {
    let manager = LocationManager(
      authorization: status, userAnswer: status == .notDetermined ? .authorizedAlways : nil,
      updates: [.location(museum)], script: .default)

    let outcome = try await locationOutcome(manager)

    if case .failure(let error) = outcome {
      Issue.record(
        Comment(
          rawValue:
            "currentLocation(using:) threw \(error) although the user allowed location "
            + "always (.authorizedAlways\(status == .notDetermined ? ", when asked" : "")): "
            + "that permission includes when in use, so locate as with .authorizedWhenInUse"))
    }
    #expect(
      (try? outcome.get()) == museum,
      "currentLocation(using:) must return the manager's first location")
  }

  @Test("Throws denied when the user says no", arguments: scripts)
  func throwsWhenTheUserSaysNo(script: CallbackScript) async throws {
    let manager = LocationManager(
      authorization: .notDetermined, userAnswer: .denied, updates: [.location(museum)],
      script: script)

    await #expect(
      throws: LocationPermissionError.denied,
      "a .denied status must throw LocationPermissionError.denied, without starting updates"
    ) {
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

    await #expect(
      throws: expected,
      "a .denied or .restricted status must throw the matching LocationPermissionError at once"
    ) {
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

    #expect(location == bridge, "currentLocation(using:) must return the manager's first location")
    #expect(
      released,
      "the delegate outlived currentLocation(using:): let it go once the caller is answered")
  }

  @Test("A second call while the first still waits answers both callers")
  func aSecondCallAnswersBothCallers() async throws {
    let gate = CallbackGate()
    let manager = LocationManager(
      authorization: .notDetermined, userAnswer: .authorizedWhenInUse,
      updates: [.location(museum), .location(bridge)], script: gate.script)

    // The first call sets its delegate and waits for the manager's report...
    let settling = SettlingExecutor()
    let earlier = Task(executorPreference: settling) { try await currentLocation(using: manager) }
    try #require(
      await eventually { gate.heldCount == 1 },
      "currentLocation(using:) did not set the manager's delegate")
    // ...when another part of the app asks too, with the same manager (and waits, on a
    // delegate of its own or joined to the first call); only then does the manager report
    // anything.
    let jobsBefore = settling.jobsRun
    let later = Task(executorPreference: settling) { try await currentLocation(using: manager) }
    try #require(
      await eventually { settling.isIdle && settling.jobsRun > jobsBefore },
      "a second currentLocation(using:) did not start waiting")
    gate.open()
    let second = try await withDeadline(
      .seconds(2), "a second currentLocation(using:), while the first still waited,",
      hint: askHint
    ) {
      try await later.value
    }
    let first = try await withDeadline(
      .seconds(2), "the first currentLocation(using:), whose delegate was replaced,",
      hint: replacedHint
    ) {
      try await earlier.value
    }
    let stopped = await eventually { !manager.isUpdatingLocation }

    #expect(second == museum, "the manager's first location is \(museum)")
    #expect(first == museum, "a caller who was waiting already gets the same location")
    #expect(stopped, "updates must be stopped once the callers have their location")
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
      let stopped = await eventually(within: .seconds(1)) { !manager.isUpdatingLocation }

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

      await #expect(
        throws: LocationError.locationUnavailable,
        Comment(
          rawValue: "locationManager(_:didFailWithError:) must throw the manager's error; it "
            + "is an optional delegate method, so the compiler never asked for it")
      ) {
        try await withDeadline(.seconds(2), "currentLocation(using:)", hint: failureHint) {
          try await currentLocation(using: manager)
        }
      }
      let quiet = await eventually { manager.pendingReportCount == 0 }
      let stopped = await eventually(within: .seconds(1)) { !manager.isUpdatingLocation }

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
        #expect(
          throws: LocationPermissionError.denied,
          "a .denied status must throw LocationPermissionError.denied, without starting updates"
        ) { try outcome.get() }
        #expect(manager.startCount == 0, "updates must not be started without permission")
      } else {
        #expect(
          try outcome.get() == museum,
          "currentLocation(using:) must return the manager's first location")
        #expect(!manager.isUpdatingLocation, "updates must be stopped")
      }
      #expect(quiet, "the manager's later reports did not finish")
    }
  }
}
