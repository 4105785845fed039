import LegacyKit

// An alternative to the solution: `makeStream(of:throwing:)` instead of the closure
// initializer, and a delegate object that is handed the continuation from outside.

/// Every location `receiver` reports from now on, oldest first, for as long as the caller
/// iterates: `for try await location in locationUpdates(from: receiver) { … }`.
func locationUpdates(from receiver: GPSReceiver) -> AsyncThrowingStream<Location, any Error> {
  let (stream, continuation) = AsyncThrowingStream.makeStream(of: Location.self)
  let delegate = StreamingDelegate(continuation: continuation)
  // The termination handler holds the delegate (the receiver only holds it weakly) until the
  // stream ends, and is set before the receiver can report, or fail, inside its start call.
  continuation.onTermination = { _ in
    withExtendedLifetime(delegate) {
      receiver.stopUpdatingLocation()
      receiver.delegate = nil
    }
  }
  receiver.delegate = delegate
  receiver.startUpdatingLocation()
  return stream
}

private final class StreamingDelegate: GPSReceiverDelegate, Sendable {
  let continuation: AsyncThrowingStream<Location, any Error>.Continuation

  init(continuation: AsyncThrowingStream<Location, any Error>.Continuation) {
    self.continuation = continuation
  }

  func gpsReceiver(_ receiver: GPSReceiver, didUpdateLocations locations: [Location]) {
    locations.forEach { continuation.yield($0) }
  }

  func gpsReceiver(_ receiver: GPSReceiver, didFailWithError error: any Error) {
    continuation.finish(throwing: error)
  }
}
