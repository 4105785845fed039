import LegacyKit
import Testing
import WorkbookTesting

@testable import Streams

private let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(100))]

private let home = Location(latitude: 48.8566, longitude: 2.3522)
private let bakery = Location(latitude: 48.8570, longitude: 2.3530)
private let park = Location(latitude: 48.8575, longitude: 2.3541)
private let office = Location(latitude: 48.8581, longitude: 2.3555)
private let station = Location(latitude: 48.8590, longitude: 2.3570)
private let museum = Location(latitude: 48.8606, longitude: 2.3376)

/// A walk: one location, then a batch of two (the receiver was busy), then one at a time.
private let walk: [GPSReading] = [
  .locations([home]), .locations([bakery, park]), .locations([office]), .locations([station]),
  .locations([museum]),
]

private let updatesHint =
  "gpsReceiver(_:didUpdateLocations:) must yield every location of the batch; is your "
  + "delegate still alive? The receiver holds it weakly, so something that lives as long as "
  + "the stream (its onTermination closure) must hold it"
private let failureHint =
  "gpsReceiver(_:didFailWithError:) must end the stream with continuation.finish(throwing: "
  + "error); it is an optional delegate method, so the compiler never asked for it; if it is "
  + "there, it let this error go by: every failure the receiver reports ends the stream, as "
  + "locationUpdates(from:)'s doc comment says, .signalLost too, not only the ones that look "
  + "lasting"
/// How the receiver is stopped, for every test that finds it still on.
let stopInOnTermination =
  "stop it in the continuation's onTermination, however the stream ends: a break, a "
  + "cancelled task and a dropped stream end it as .cancelled, not .finished"
private let lateDelegate =
  "the receiver reported before your delegate was set (a receiver may report inside "
  + "startUpdatingLocation(), or from its queue before your next line runs), so nobody heard "
  + "that report: set the delegate (and onTermination) first, then call "
  + "startUpdatingLocation(); \(registerFirst)"
private let lateTermination =
  "the receiver failed inside startUpdatingLocation() and stayed on, while the same failure "
  + "reported later, from its queue, stops it at once: the failure finished the stream before "
  + "your onTermination was set, so the handler did not run when the stream ended, only when "
  + "the stream is let go. Set onTermination before you start the receiver; \(registerFirst)"

/// What most likely keeps a loop over a stream from `receiver` waiting, judged at the
/// deadline from what the receiver saw: a report made before the delegate was set, a delegate
/// that is gone, or else `hint`.
private func diagnosis(of receiver: GPSReceiver, otherwise hint: String) -> String {
  if receiver.unheardReportCount > 0, receiver.delegate != nil {
    return lateDelegate
  }
  if receiver.isUpdatingLocation, receiver.delegate == nil {
    return updatesHint
  }
  return hint
}

/// Iterates a new stream from `receiver` until it has `count` locations, then breaks out of
/// the loop. The stream is released with the loop, as in an app.
private func first(
  _ count: Int, from receiver: GPSReceiver, hint: String = updatesHint,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [Location] {
  try await withDeadline(
    .seconds(2), "locationUpdates(from:)",
    diagnosis: { diagnosis(of: receiver, otherwise: hint) }, sourceLocation: sourceLocation
  ) {
    var seen: [Location] = []
    for try await location in locationUpdates(from: receiver) {
      seen.append(location)
      if seen.count == count { break }
    }
    return seen
  }
}

/// Iterates a new stream from `receiver` to its end, and returns what it yielded and the
/// error it ended with, if any.
private func everything(
  from receiver: GPSReceiver, sourceLocation: SourceLocation = #_sourceLocation
) async throws -> (locations: [Location], error: (any Error)?) {
  try await withDeadline(
    .seconds(2), "the loop over locationUpdates(from:)",
    diagnosis: { diagnosis(of: receiver, otherwise: failureHint) },
    sourceLocation: sourceLocation
  ) {
    var seen: [Location] = []
    do {
      for try await location in locationUpdates(from: receiver) {
        seen.append(location)
      }
      return (seen, nil)
    } catch {
      return (seen, error)
    }
  }
}

/// The contract of `locationUpdates(from:)`: each path, what the loop and the receiver see,
/// and the test that checks it (— where a column does not apply, and why). Tests whose name
/// is in the stress file are in `01-LocationUpdatesStressTests.swift`.
///
/// | path | locations (count, order) | end, error | receiver (running, delegate) | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | locations reported, the loop breaks | every one, in order: `yieldsEveryLocation` | — | stopped, delegate let go: `stopsWhenTheLoopBreaks` | inside `start`, on its queue, later: `yieldsEveryLocation` |
/// | 300, then a failure, to a slow loop | all, in order, none after the end: `everyLocationBeforeTheFailure` | the error after them: `endsWithTheError` (the stress test reads on only the runs that end with it) | — | one batch inside `start`, or one by one: `everyLocationBeforeTheFailure` |
/// | the receiver fails | the ones before it: `endsWithTheError` | throws its error: `endsWithTheError`; at once when it is the first reading: `endsAtOnceWhenTheFirstReadingFails` | stopped at the failure, even inside `start`, delegate let go: `stopsAtTheFailure` | — |
/// | the task is cancelled, before or after the first fix | — | the loop ends: `stopsWhenTheTaskIsCancelled` | stopped: `stopsWhenTheTaskIsCancelled` | from other threads at random moments, in order and stopped: `cancelledAtRandomMoments` |
/// | the receiver stopped from a `Task` in onTermination | — | — | off before the stream's end returns (dropped, 20 rounds with no await between the drop and the look): `stopsBeforeTheEndReturns` | — |
/// | the stream finished from a `Task` after a failure | — | — | off before the failing report (or the start call it was made in) returns: `endsWithinTheFailingReport` | the failure reported by the test's own hand, through a scheduler: `endsWithinTheFailingReport` |
/// | locations at (0, 0), the poles, the date line | every one, unchanged: `yieldsEveryCoordinate` | — | — | — |
/// | batches of 1 to 12 locations | every one, in order: `yieldsBatchesOfAnySize` | — | — | — |
/// | the stream is dropped unread | — | — | stopped, delegate let go: `stopsWhenTheStreamIsDropped` | — |
/// | a second stream after the first ended | its own locations: `streamsAgain` | — | started again: `streamsAgain` | — |
/// | two streams at once on one receiver | — the receiver has one delegate: one stream at a time, by its contract | | | |
@Suite("4.1 Location updates")
struct LocationUpdatesTests {
  @Test("Yields every location the receiver reports, in order, one at a time", arguments: scripts)
  func yieldsEveryLocation(script: CallbackScript) async throws {
    let receiver = GPSReceiver(readings: walk, script: script)

    let locations = try await first(5, from: receiver)

    if locations != [home, bakery, park, office, station], receiver.unheardReportCount > 0 {
      Issue.record(because(lateDelegate))
      return
    }
    #expect(
      locations == [home, bakery, park, office, station],
      "each location of a batch is a value of its own, oldest first")
    #expect(receiver.startCount == 1, "the stream must start the receiver once")
  }

  @Test("Stops the receiver when the loop breaks, and lets its delegate go")
  func stopsWhenTheLoopBreaks() async throws {
    // Readings for a whole second: the receiver would still be talking after the break.
    let receiver = GPSReceiver(
      readings: Array(repeating: .locations([home]), count: 50), script: .default)

    let locations = try await first(2, from: receiver)
    let stopped = await eventually { !receiver.isUpdatingLocation }
    let released = await eventually { receiver.delegate == nil }

    #expect(locations == [home, home])
    #expect(
      stopped, because("the receiver is still on after the loop ended: \(stopInOnTermination)"))
    #expect(released, "the stream's delegate outlived the stream: let it go when the stream ends")
    if stopped {
      let reports = receiver.reportCount
      try await Task.sleep(for: .milliseconds(100))
      #expect(receiver.reportCount == reports, "the receiver must report nothing once stopped")
    }
  }

  @Test(
    "Stops the receiver when the task iterating is cancelled, before or after the first fix",
    arguments: [CallbackScript.never, .default])
  func stopsWhenTheTaskIsCancelled(script: CallbackScript) async throws {
    // With `.never`, the receiver never gets a fix: the task waits for the first location.
    let receiver = GPSReceiver(readings: [.locations([home])], script: script)
    let received = Locked(0)
    let task = Task {
      for try await _ in locationUpdates(from: receiver) {
        received.withLock { $0 += 1 }
      }
    }
    defer { task.cancel() }

    let started = await eventually { receiver.isUpdatingLocation }
    try #require(started, "locationUpdates(from:) must start the receiver")
    if script.times > 0 {
      let arrived = await eventually { received.value == 1 }
      try #require(arrived, Comment(rawValue: updatesHint))
    }
    task.cancel()
    try await withDeadline(
      .seconds(2), "the cancelled loop over locationUpdates(from:)",
      hint: "cancelling the task that iterates an AsyncThrowingStream ends the loop by itself; "
        + "is something blocking in the delegate?"
    ) {
      try await task.value
    }
    let stopped = await eventually { !receiver.isUpdatingLocation }

    #expect(
      stopped,
      because(
        "the receiver is still on after the task was cancelled: \(stopInOnTermination)"))
  }

  @Test("Stops the receiver when the stream is dropped without being iterated")
  func stopsWhenTheStreamIsDropped() async throws {
    let receiver = GPSReceiver(readings: walk, script: .default)

    _ = locationUpdates(from: receiver)
    let stopped = await eventually { !receiver.isUpdatingLocation }

    #expect(receiver.startCount == 1, "locationUpdates(from:) must start the receiver")
    #expect(
      stopped,
      because(
        "the receiver is still on, but nobody holds the stream, so it has ended: "
          + stopInOnTermination))
    #expect(
      await eventually { receiver.delegate == nil },
      "the stream's delegate outlived the stream: let it go when the stream ends")
  }

  @Test(
    "Ends the stream with the receiver's error, after the locations before it", arguments: scripts)
  func endsWithTheError(script: CallbackScript) async throws {
    let receiver = GPSReceiver(
      readings: [.locations([home]), .failure(.signalLost), .locations([park])], script: script)

    let outcome = try await everything(from: receiver)
    let stopped = await eventually { !receiver.isUpdatingLocation }

    #expect(outcome.locations == [home], "the locations before the failure, and none after it")
    #expect(
      outcome.error as? GPSError == .signalLost,
      "the stream must end by throwing the receiver's error: finish(throwing: error)")
    #expect(
      stopped,
      "a failure does not stop the receiver by itself: the stream's end (onTermination) must")
  }

  @Test("Ends at once when the very first reading is a failure", arguments: scripts)
  func endsAtOnceWhenTheFirstReadingFails(script: CallbackScript) async throws {
    let receiver = GPSReceiver(
      readings: [.failure(.antennaFault), .locations([home])], script: script)

    let outcome = try await everything(from: receiver)
    let stopped = await eventually { !receiver.isUpdatingLocation }

    #expect(outcome.locations.isEmpty)
    #expect(
      outcome.error as? GPSError == .antennaFault,
      "the stream must end by throwing the receiver's error: finish(throwing: error)")
    #expect(
      stopped, because("the receiver is still on after the stream ended: \(stopInOnTermination)"))
  }

  @Test(
    "Stops the receiver as soon as it fails, even inside the start call, while the stream is still held",
    arguments: [CallbackScript.later(.milliseconds(100)), .synchronously])
  func stopsAtTheFailure(script: CallbackScript) async throws {
    let receiver = GPSReceiver(readings: [.failure(.antennaFault)], script: script)

    // Made and held, as a property of a screen would hold it, but not iterated yet: the failure
    // ends the stream now, and the receiver must stop now, not when the stream is let go.
    let updates = locationUpdates(from: receiver)
    let stopped = await eventually { !receiver.isUpdatingLocation }

    if !stopped, script.timing == .synchronously {
      // Is it the order? The same failure, reported from the receiver's queue well after the
      // start call has returned.
      let control = GPSReceiver(
        readings: [.failure(.antennaFault)], script: .later(.milliseconds(100)))
      let controlUpdates = locationUpdates(from: control)
      let controlStopped = await eventually { !control.isUpdatingLocation }
      withExtendedLifetime(controlUpdates) {}
      if controlStopped {
        Issue.record(because(lateTermination))
        withExtendedLifetime(updates) {}
        return
      }
    }
    #expect(
      stopped,
      because(
        "the receiver failed and is still on: a failure finishes the stream, and the stream's "
          + "end must stop the receiver (onTermination runs with .finished)"))
    #expect(
      await eventually { receiver.delegate == nil },
      "the stream's delegate outlived the stream, which the failure ended: let it go when the stream ends, however it ends"
    )
    withExtendedLifetime(updates) {}
  }

  @Test("Streams from the same receiver again after a stream has ended")
  func streamsAgain() async throws {
    let receiver = GPSReceiver(readings: walk, script: .default)

    let firstWalk = try await first(2, from: receiver)
    // Starting a receiver that is still on does nothing: the second stream would wait forever.
    let firstStopped = await eventually { !receiver.isUpdatingLocation }
    try #require(
      firstStopped,
      "the receiver is still on after the first stream ended: stop it in onTermination")
    let secondWalk = try await first(3, from: receiver)
    let secondStopped = await eventually { !receiver.isUpdatingLocation }

    #expect(firstWalk == [home, bakery])
    #expect(secondWalk == [home, bakery, park], "a new start reports from the first reading")
    #expect(secondStopped, "each stream must stop the receiver when it ends")
    #expect(receiver.startCount == 2)
  }

  @Test(
    "The receiver is off before the stream's end returns: dropped, or failed inside the start call")
  func stopsBeforeTheEndReturns() async throws {
    // No await between the end of a stream and the look at the receiver: a stop done by the
    // stream's end itself has happened; one handed to a task has not, on (nearly) every round.
    var stillOn: Int?
    for round in 1...20 where stillOn == nil {
      let receiver = GPSReceiver(readings: walk, script: .later(.seconds(1)))
      _ = locationUpdates(from: receiver)
      if receiver.isUpdatingLocation { stillOn = round }
    }

    #expect(
      stillOn == nil,
      because(
        """
        in round \(stillOn ?? 0) the receiver was still on right after its stream ended (it \
        was dropped): the stop comes later, from work handed to a task of its own. Meanwhile \
        the receiver keeps reporting, and a stream started at once from the same receiver \
        finds it on (its start does nothing, no readings begin again) and is then switched off \
        by the late stop, so it stays silent. Stop the receiver in onTermination itself, \
        before it returns
        """))
  }

  @Test("A failure stops the receiver before the delegate call that reported it returns")
  func endsWithinTheFailingReport() async throws {
    // The first reading is made by the test itself, on its own thread, through a scheduler
    // it holds: when that call returns, the stream must have ended and stopped the receiver.
    var stillOn: [String] = []
    for round in 1...10 {
      let pending = Locked<[@Sendable () -> Void]>([])
      let byHand = CallbackScheduler(name: "the test's own hand") { work in
        pending.withLock { $0.append(work) }
      }
      let receiver = GPSReceiver(
        readings: [.failure(.signalLost), .locations([home])], interval: .seconds(1),
        script: CallbackScript(timing: .scheduled(byHand)))
      let synchronous = GPSReceiver(
        readings: [.failure(.antennaFault)], script: .synchronously)

      let updates = locationUpdates(from: receiver)
      for work in pending.withLock({ $0 }) { work() }
      let onAfterTheReport = receiver.isUpdatingLocation
      let syncUpdates = locationUpdates(from: synchronous)
      let onAfterTheStart = synchronous.isUpdatingLocation
      withExtendedLifetime((updates, syncUpdates)) {}
      _ = await eventually { !receiver.isUpdatingLocation && !synchronous.isUpdatingLocation }

      if onAfterTheReport {
        stillOn.append("round \(round): after gpsReceiver(_:didFailWithError:) returned")
      }
      if onAfterTheStart {
        stillOn.append("round \(round): after a start call that failed inside it returned")
      }
      if !stillOn.isEmpty { break }
    }

    #expect(
      stillOn.isEmpty,
      because(
        """
        the receiver failed, and was still on \(stillOn.joined(separator: "; ")): the stream \
        ended later than the failure, so until then the receiver stays on and later readings \
        are still yielded, and locations reported after the failure can reach the loop before \
        its error. End the stream in the delegate call that reports the failure, before it \
        returns, not from a task of its own
        """))
  }
}
