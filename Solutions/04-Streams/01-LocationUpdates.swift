import LegacyKit

// The delegate way, in a screen that draws the user's route as they walk:
//
//     func viewDidAppear() {
//       receiver.delegate = self
//       receiver.startUpdatingLocation()
//     }
//     func viewDidDisappear() {
//       receiver.stopUpdatingLocation()
//     }
//     func gpsReceiver(_ receiver: GPSReceiver, didUpdateLocations locations: [Location]) {
//       route.append(contentsOf: locations)
//     }
//     func gpsReceiver(_ receiver: GPSReceiver, didFailWithError error: Error) {
//       showError(error)
//     }

/// Every location `receiver` reports from now on, oldest first, for as long as the caller
/// iterates: `for try await location in locationUpdates(from: receiver) { … }`.
///
/// Starts the receiver, and stops it when the iteration ends, however it ends: the loop
/// breaks, the task is cancelled, the stream is dropped. A failure ends the stream with the
/// receiver's error.
func locationUpdates(from receiver: GPSReceiver) -> AsyncThrowingStream<Location, any Error> {
  AsyncThrowingStream { continuation in
    LocationFeed(receiver: receiver, continuation: continuation).start()
  }
}

/// The receiver's delegate for one stream: turns delegate calls into the stream's values and
/// its end.
private final class LocationFeed: GPSReceiverDelegate, Sendable {
  private let receiver: GPSReceiver
  private let continuation: AsyncThrowingStream<Location, any Error>.Continuation

  init(
    receiver: GPSReceiver, continuation: AsyncThrowingStream<Location, any Error>.Continuation
  ) {
    self.receiver = receiver
    self.continuation = continuation
  }

  func start() {
    // The stream calls this once, however the iteration ends: a `break` (the loop releases
    // its iterator and the stream), a cancelled task, a stream dropped unread, or a `finish`
    // below. It is also what keeps this feed alive, since the receiver's reference is weak:
    // the stream holds the closure, the closure holds `self`, until the stream has ended.
    // Set it before starting: a receiver may report, and even fail, inside the start call.
    continuation.onTermination = { _ in self.stop() }
    receiver.delegate = self
    receiver.startUpdatingLocation()
  }

  private func stop() {
    receiver.stopUpdatingLocation()
    receiver.delegate = nil
  }

  func gpsReceiver(_ receiver: GPSReceiver, didUpdateLocations locations: [Location]) {
    // A busy receiver reports several locations at once; each is a value of the stream.
    for location in locations {
      continuation.yield(location)
    }
  }

  func gpsReceiver(_ receiver: GPSReceiver, didFailWithError error: any Error) {
    // Optional in the protocol, so the compiler never asks for it; without it, a failure
    // leaves the consumer waiting for a location that will never come. Finishing with the
    // error makes the consumer's `for try await` throw it, and runs `onTermination`.
    continuation.finish(throwing: error)
  }
}
