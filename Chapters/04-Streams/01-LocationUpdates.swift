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
  // TODO: Stream what `receiver` reports, as documented above: every location, in order,
  // until a failure ends the stream with the receiver's error. The receiver runs exactly as
  // long as the stream does, and holds its delegate weakly.
  AsyncThrowingStream { continuation in
    continuation.finish(throwing: Unfinished())
  }
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
