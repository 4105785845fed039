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
  // `makeStream` hands back the stream and its continuation side by side, so the continuation
  // can go straight to legacy code (here, into the hub's closures) without living inside the
  // stream's build closure. `.bufferingNewest`: a sensor's latest samples matter most.
  let (stream, continuation) = AsyncStream.makeStream(
    of: Sample.self, bufferingPolicy: .bufferingNewest(capacity))
  hub.startMeasuring(
    receive: { sample in
      // What `yield` returns says what became of the value, which is what the hub asks.
      switch continuation.yield(sample) {
      case .enqueued(let remaining):
        // Buffered (or handed straight to a waiting consumer); room for `remaining` more.
        return .accepted(room: remaining)
      case .dropped(let lost):
        // The buffer was full. With `.bufferingNewest`, `lost` is the OLDEST waiting sample,
        // evicted to make room for this one, not `sample` (`.bufferingOldest` would drop
        // `sample` itself). Report the one that was really lost.
        return .dropped(lost)
      case .terminated:
        // The stream has ended: nobody will read again. The hub has no stop method; this
        // receipt is how it learns to stop, at its next sample.
        return .closed
      @unknown default:
        // A kind of result this code does not know: stop rather than guess.
        return .closed
      }
    },
    completion: {
      // The hub's session is over: no more samples will come. End the stream, or the consumer
      // waits forever after the last one.
      continuation.finish()
    })
  return stream
}
