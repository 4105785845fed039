import LegacyKit

// An alternative to the solution: a general-purpose delegate adapter that forwards to
// closures, kept alive by the termination handler, instead of a delegate that knows the
// continuation.

/// Every location `receiver` reports from now on, oldest first, for as long as the caller
/// iterates: `for try await location in locationUpdates(from: receiver) { … }`.
func locationUpdates(from receiver: GPSReceiver) -> AsyncThrowingStream<Location, any Error> {
  AsyncThrowingStream { continuation in
    let adapter = GPSAdapter(
      onLocations: { locations in
        for location in locations { continuation.yield(location) }
      },
      onFailure: { error in
        continuation.finish(throwing: error)
      })
    continuation.onTermination = { _ in
      receiver.stopUpdatingLocation()
      receiver.delegate = nil
      _ = adapter  // held until the stream ends: the receiver holds it weakly
    }
    receiver.delegate = adapter
    receiver.startUpdatingLocation()
  }
}

/// Turns a receiver's delegate calls into calls of two closures.
private final class GPSAdapter: GPSReceiverDelegate, Sendable {
  private let onLocations: @Sendable ([Location]) -> Void
  private let onFailure: @Sendable (any Error) -> Void

  init(
    onLocations: @escaping @Sendable ([Location]) -> Void,
    onFailure: @escaping @Sendable (any Error) -> Void
  ) {
    self.onLocations = onLocations
    self.onFailure = onFailure
  }

  func gpsReceiver(_ receiver: GPSReceiver, didUpdateLocations locations: [Location]) {
    onLocations(locations)
  }

  func gpsReceiver(_ receiver: GPSReceiver, didFailWithError error: any Error) {
    onFailure(error)
  }
}
