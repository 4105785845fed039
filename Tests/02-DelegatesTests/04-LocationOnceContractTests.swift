import LegacyKit
import Testing
import WorkbookTesting

@testable import Delegates

private let office = Location(latitude: 48.8584, longitude: 2.2945)
private let harbour = Location(latitude: 48.8530, longitude: 2.3499)

/// What to look for when the call that was the manager's delegate when it reported is never
/// answered, when the call it replaced is not, and when the call that one replaced is not.
private let hints = [
  "each call made its own object the manager's delegate while the calls before it still "
    + "waited, so the second call's request had taken the first one's place before the third "
    + "took the second's; the answer reached the caller whose request it replaced, but not "
    + "the one that request had replaced in turn. The manager reports to one delegate only: "
    + "every caller waiting on it must get the answer, however many times the delegate "
    + "changed hands",
  "the third call made its own object the manager's delegate while the second still waited, "
    + "and the manager reports to one delegate only, so the second call's delegate never "
    + "heard another word; a caller whose delegate was replaced must get the same answer",
  "the third call's request was the manager's delegate when it reported, and its first "
    + "didUpdateLocations must resume the stored continuation; is your delegate still alive? "
    + "The manager holds it weakly, so a delegate nothing else holds is gone before the "
    + "manager reports",
]

extension LocationOnceTests {
  @Test("Three calls overlapping on one manager: every caller gets the answer")
  func everyReplacedCallerIsAnswered() async throws {
    let gate = CallbackGate()
    let manager = LocationManager(
      authorization: .notDetermined, userAnswer: .authorizedWhenInUse,
      updates: [.location(office), .location(harbour)], script: gate.script)

    // Three parts of the app ask the same manager, each while the ones before it still wait;
    // the manager reports nothing until all three wait (each on a delegate of its own, or
    // joined to a call already waiting: the contract allows either).
    let settling = SettlingExecutor()
    var calls: [Task<Location, any Error>] = []
    for number in 1...3 {
      let jobsBefore = settling.jobsRun
      calls.append(
        Task(executorPreference: settling) { try await currentLocation(using: manager) })
      let waiting = await eventually { settling.isIdle && settling.jobsRun > jobsBefore }
      let stuck = settling.jobsRun == jobsBefore && !settling.isIdle
      try #require(
        waiting,
        Comment(
          rawValue: "currentLocation(using:) number \(number) did not start waiting"
            + (stuck
              ? ": it never gave its thread back, as a call that suspends does; it blocked that thread while it waited for the manager's answer (a semaphore, a sleep, a blocking wait)"
              : "")))
      if number == 1 {
        try #require(
          await eventually { gate.heldCount == 1 },
          "currentLocation(using:) did not set the manager's delegate")
      }
    }
    gate.open()

    let names = [
      "the first currentLocation(using:), whose delegate the second call replaced,",
      "the second currentLocation(using:), whose delegate the third call replaced,",
      "the third currentLocation(using:), the manager's delegate when it reported,",
    ]
    for index in [2, 1, 0] {
      let call = calls[index]
      let location = try await withDeadline(
        .seconds(2), names[index],
        // Only the call whose delegate the manager reported to can blame that delegate.
        likelyCause: { index == 2 ? locationCause(manager, otherwise: hints[index]) : hints[index] }
      ) { () async throws -> Location in
        do {
          return try await call.value
        } catch let refusal as LocationPermissionError {
          Issue.record(
            "\(names[index]) threw \(refusal), though the user allowed location when in use: only a .denied or .restricted status is a refusal; .notDetermined, however often the manager reports it, means the user has not answered yet"
          )
          return office
        }
      }
      #expect(
        location == office,
        "\(names[index]) returned \(location), not the manager's first location \(office)")
    }
    let stopped = await eventually { !manager.isUpdatingLocation }
    #expect(stopped, "updates must be stopped once the callers have their location")
  }

  @Test("Stops listening before the caller goes on: no delegate of the call is left on the manager")
  func letsGoOfTheManagerBeforeTheCallerGoesOn() async throws {
    let gate = CallbackGate()
    let manager = LocationManager(
      authorization: .authorizedWhenInUse, userAnswer: nil,
      updates: [.location(office), .location(harbour)], script: gate.script)
    let outcome = try await delegateAtResume(
      of: { try await currentLocation(using: manager) }, gate: gate,
      delegate: { manager.delegate },
      started: "currentLocation(using:) did not set the manager's delegate",
      name: "currentLocation(using:)",
      hint: "the first didUpdateLocations must resume the stored continuation; is your "
        + "delegate still alive? The manager holds it weakly, so a delegate nothing else holds "
        + "is gone before the manager reports")
    let location = outcome.value
    #expect(
      location == office,
      "currentLocation(using:) returned \(location), not the manager's first location \(office)")
    #expect(
      outcome.resumed,
      "currentLocation(using:) returned without ever suspending and being resumed: it waited by holding its thread (a semaphore or another blocking wait) instead of suspending until the manager reports"
    )
    let seen = outcome.delegate
    #expect(
      seen == "none",
      """
      when currentLocation(using:) returned, the manager's delegate was still \(seen), set by \
      this call: the manager goes on reporting to it (here the second location, already on its \
      way) after the caller has its answer, until the object happens to be freed. A \
      one-shot call is done with the manager when it answers: it must stop listening \
      before its caller goes on, as it stops the updates
      """)
  }
}
