import LegacyKit

// The callback way, in a step counter that kept every sample in an array:
//
//     hub.startMeasuring(
//       receive: { sample in
//         self.samples.append(sample)  // grows without limit when the app falls behind
//         return .accepted(room: .max)
//       },
//       completion: {
//         self.countSteps()
//       })

/// The hub's samples, for as long as the caller iterates: `for await sample in samples(…) { … }`.
///
/// At most `capacity` samples wait unread: when the consumer falls behind, the oldest waiting
/// sample makes room for the new one. The hub is told what became of each sample, stops when
/// nobody listens any more, and the stream ends after its last sample.
func samples(from hub: TelemetryHub, keepingNewest capacity: Int) -> AsyncStream<Sample> {
  // TODO: Stream the hub's samples, as documented above: at most `capacity` waiting, the
  // oldest making room; each sample answered with the `SampleReceipt` that says what became
  // of it; the hub stopped once nobody listens, and the stream ended when the hub is done.
  AsyncStream { continuation in
    continuation.finish()
  }
}
