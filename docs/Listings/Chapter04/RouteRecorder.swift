// Chapter 4, overview: the consumer's side of a stream is a loop.
import LegacyKit

struct Location: Sendable { var latitude: Double, longitude: Double }

/// A made-up receiver that reports a few fixes and stops.
final class LocationReceiver: @unchecked Sendable {
  func start(_ report: @escaping (Location) -> Void, finished: @escaping () -> Void) {
    CallbackScript.default.deliver {
      for step in 0..<3 { report(Location(latitude: 51.5 + Double(step), longitude: 0)) }
      finished()
    }
  }
}

func locationUpdates(from receiver: LocationReceiver) -> AsyncThrowingStream<Location, any Error> {
  AsyncThrowingStream { continuation in
    receiver.start({ continuation.yield($0) }, finished: { continuation.finish() })
  }
}

func record(from receiver: LocationReceiver) async throws -> [Location] {
  var route: [Location] = []
  // listing: loop
  for try await location in locationUpdates(from: receiver) {
    route.append(location)
  }
  // listing: end
  return route
}
