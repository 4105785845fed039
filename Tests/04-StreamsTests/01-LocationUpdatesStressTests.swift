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
        problems.append("round \(round): the locations are not the route's first ones, in order")
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
