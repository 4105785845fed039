import LegacyKit

// An alternative to the solution: the closure initializer instead of `makeStream(of:)`; the
// hub is started inside the build closure, where the continuation already exists.

/// The hub's samples, for as long as the caller iterates.
func samples(from hub: TelemetryHub, keepingNewest capacity: Int) -> AsyncStream<Sample> {
  AsyncStream(Sample.self, bufferingPolicy: .bufferingNewest(capacity)) { continuation in
    hub.startMeasuring(
      receive: { sample in
        switch continuation.yield(sample) {
        case .enqueued(let remaining): return .accepted(room: remaining)
        case .dropped(let evicted): return .dropped(evicted)
        case .terminated: return .closed
        @unknown default: return .closed
        }
      },
      completion: { continuation.finish() })
  }
}
