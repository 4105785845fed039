import LegacyKit
import Testing
import WorkbookTesting

@testable import Streams

extension LocationUpdatesTests {
  @Test(
    "Loops cancelled from other threads at random moments: in order, and the receiver always stopped and let go"
  )
  func cancelledAtRandomMoments() async throws {
    let route = (0..<40).map { Location(latitude: 48 + Double($0) / 1000, longitude: 2.35) }
    var problems: [String] = []

    for round in 1...30 {
      let receiver = GPSReceiver(
        readings: route.map { .locations([$0]) }, interval: .microseconds(300), script: .default)
      let seen = Locked<[Location]>([])
      let consumer = Task {
        for try await location in locationUpdates(from: receiver) {
          seen.withLock { $0.append(location) }
        }
      }
      // A callback on another thread cancels the loop: before it starts, while it waits for
      // the first fix, or in the middle of the readings.
      onRandomThread(within: .milliseconds(3)) { consumer.cancel() }

      try await withDeadline(
        .seconds(2), "the cancelled loop over locationUpdates(from:), round \(round)",
        hint: "cancelling the task that iterates an AsyncThrowingStream ends the loop by itself; "
          + "is something blocking in the delegate?"
      ) {
        _ = await consumer.result
      }
      let released = await eventually { !receiver.isUpdatingLocation && receiver.delegate == nil }

      let locations = seen.value
      if locations != Array(route.prefix(locations.count)) {
        problems.append(
          "round \(round): the locations are not the route's first ones, in order (the stream "
            + "promises every location, oldest first, even to a loop that reads slower than the "
            + "receiver reports: none dropped by a buffer, none passed on out of order, and work "
            + "handed to a task of its own may run in any order)")
      }
      if receiver.startCount != 1 {
        problems.append("round \(round): the receiver was started \(receiver.startCount) times")
      }
      if !released {
        problems.append(
          "round \(round): after the loop was cancelled, the receiver is "
            + (receiver.isUpdatingLocation ? "still on" : "off but still holds its delegate"))
      }
      if problems.count >= 3 { break }
    }

    #expect(
      problems.isEmpty,
      """
      each stream starts the receiver once, yields its locations in order, and when its loop \
      is cancelled stops the receiver and lets the delegate go: \
      \(problems.prefix(3).joined(separator: "; ")). A receiver left on: \(stopInOnTermination)
      """)
  }
}

/// Iterates a new stream from `receiver` to its end, calling `pause` after the first location,
/// and returns what it yielded and whether it ended with `.signalLost`; `nil` when the loop
/// has not ended within 2 seconds (the other tests say why a loop waits forever).
private func readToTheEnd(
  from receiver: GPSReceiver, pause: @escaping @Sendable () async -> Void = {}
) async -> (locations: [Location], signalLost: Bool)? {
  let outcome = Locked<([Location], Bool)?>(nil)
  let loop = Task {
    var seen: [Location] = []
    do {
      for try await location in locationUpdates(from: receiver) {
        seen.append(location)
        if seen.count == 1 { await pause() }
      }
      outcome.withLock { $0 = (seen, false) }
    } catch {
      outcome.withLock { $0 = (seen, (error as? GPSError) == .signalLost) }
    }
  }
  guard await eventually({ outcome.value != nil }) else {
    loop.cancel()
    return nil
  }
  return outcome.value
}

extension LocationUpdatesTests {
  @Test(
    "300 locations then a failure, read by a slow loop: every location, in order, before the error"
  )
  func everyLocationBeforeTheFailure() async throws {
    let route = (0..<300).map { Location(latitude: 48 + Double($0) / 10_000, longitude: 2.35) }
    var problems: [String] = []

    for round in 1...5 {
      // All 300 in one batch inside startUpdatingLocation(), the failure at once after it.
      let batch = GPSReceiver(
        readings: [.locations(route), .failure(.signalLost)], interval: .zero,
        script: .synchronously)
      // One at a time from the receiver's queue, while the loop, after its first location,
      // waits until the receiver has reported everything (a busy screen, a slow reader).
      let oneByOne = GPSReceiver(
        readings: route.map { .locations([$0]) } + [.failure(.signalLost)], interval: .zero,
        script: .default)
      let slowly: @Sendable () async -> Void = {
        _ = await eventually { oneByOne.reportCount == route.count + 1 }
      }
      for (name, receiver, pause) in [
        ("in one batch", batch, { @Sendable () async -> Void in }),
        ("one by one to a slow loop", oneByOne, slowly),
      ] {
        guard let (locations, signalLost) = await readToTheEnd(from: receiver, pause: pause),
          signalLost
        else { continue }
        // Only the batch's last location: the batch test in LocationUpdatesTests says why.
        if locations == [route.last!], receiver === batch { continue }
        if locations.count < route.count {
          problems.append(
            "round \(round), \(name): the loop got \(locations.count) of the 300 locations "
              + "before the error ended it")
        } else if locations != route {
          problems.append(
            "round \(round), \(name): the loop got the 300 locations, but not in the order "
              + "the receiver reported them")
        }
      }
      if !problems.isEmpty { break }
    }

    #expect(
      problems.isEmpty,
      """
      the stream promises every location the receiver reports, oldest first, even to a loop \
      that reads slower than the receiver reports, and even when a failure follows at once: \
      \(problems.joined(separator: "; ")). A route drawn from this stream has gaps or jumps. \
      Keep every location until the loop reads it, and pass each one on before \
      gpsReceiver returns: work handed to a task of its own may run in any order, or after \
      the failure has already ended the stream
      """)
  }
}

extension LocationUpdatesTests {
  @Test(
    "Yields every location as reported, whatever its coordinates: (0, 0), the poles, the date line")
  func yieldsEveryCoordinate() async throws {
    // Real places: the Gulf of Guinea at (0, 0), both poles, both sides of the date line.
    let unusual = [
      Location(latitude: 0, longitude: 0), Location(latitude: 90, longitude: 0),
      Location(latitude: -90, longitude: 180), Location(latitude: 0, longitude: -180),
      Location(latitude: -33.8568, longitude: 151.2153), Location(latitude: 0, longitude: 0),
    ]
    let receiver = GPSReceiver(
      readings: unusual.map { .locations([$0]) } + [.failure(.signalLost)],
      interval: .milliseconds(1), script: .default)

    let locations = await readToTheEnd(from: receiver)?.locations ?? []

    #expect(
      locations == unusual,
      """
      the receiver reported \(unusual), the loop got \(locations): every reading the receiver \
      reports is a location of the route, (0, 0) and the extremes of latitude and longitude \
      included; the stream must not judge or filter them
      """)
  }

  @Test("A batch of any size: each of its locations is a value of its own, oldest first")
  func yieldsBatchesOfAnySize() async throws {
    // One report per size, 1 to 12 locations: a receiver that was busy for a while.
    let sizes = Array(1...12)
    var next = 0
    let batches = sizes.map { size in
      (0..<size).map { _ in
        next += 1
        return Location(latitude: 48 + Double(next) / 10_000, longitude: 2.35)
      }
    }
    let receiver = GPSReceiver(
      readings: batches.map { .locations($0) } + [.failure(.signalLost)],
      interval: .milliseconds(1), script: .default)

    let locations = await readToTheEnd(from: receiver)?.locations ?? []

    let lost = batches.filter { batch in !batch.allSatisfy(locations.contains) }.map(\.count)
    let wrong =
      lost.isEmpty
      ? "the locations came in another order than reported"
      : "locations were lost from the batches of "
        + lost.map(String.init).joined(separator: ", ") + " locations"
    #expect(
      locations == batches.flatMap { $0 },
      """
      batches of 1 to 12 locations, one batch per report, then a failure: \(wrong). A batch \
      is what a busy receiver saved up, and every location in it is part of the route, \
      whatever the size of the batch: one value each, oldest first
      """)
  }
}
