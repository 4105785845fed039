import CoroutineKit
import Dispatch

// The coroutine way: a coroutine that iterates the channel, blocking its thread between
// elements, until the producer closes it.
//
//     let readings = CoChannel<Reading>(capacity: 4)
//     sensorQueue.startCoroutine {
//       for reading in sensor.readings { try readings.awaitSend(reading) }
//       readings.close()
//     }
//     DispatchQueue.global().startCoroutine {
//       for reading in readings { show(reading) }  // can't tell close from cancel
//     }
//
// The producer stays legacy. The consumer becomes `for try await reading in readings.elements()`.

extension CoChannel where Element: Sendable {
  /// Consumes the channel as an `AsyncThrowingStream`: every element, in order, until the
  /// channel is closed and drained (the sequence ends) or cancelled (it throws
  /// `CoChannelError.cancelled`).
  ///
  /// The stream is the channel's consumer. If its consumer stops early (`break`, an error
  /// thrown in the loop, a cancelled task), the channel is cancelled, so no producer and
  /// no coroutine stays blocked on it.
  func elements() -> AsyncThrowingStream<Element, any Error> {
    // TODO: Consume the channel as documented above: every element in order, the end once it
    // is closed and drained, `CoChannelError.cancelled` when it is cancelled, and the channel
    // cancelled when the stream's consumer stops early.
    AsyncThrowingStream { $0.finish(throwing: Unfinished()) }
  }
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
