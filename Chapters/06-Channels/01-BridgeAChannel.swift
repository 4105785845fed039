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
    // TODO: Feed an AsyncThrowingStream from the channel: receive each element (the
    // blocking calls work only inside a coroutine), finish the stream when the channel
    // ends, and cancel the channel when the consumer stops early (`onTermination`).
    AsyncThrowingStream { $0.finish(throwing: Unfinished()) }
  }
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
