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
    AsyncThrowingStream { continuation in
      // Set before anything can end the stream. `.cancelled` means the consumer stopped
      // early; after `.finished` the channel has ended by itself and is left as it is.
      continuation.onTermination = { termination in
        if case .cancelled = termination {
          // Fails a producer blocked in `awaitSend` and the pump below, which is blocked
          // in `awaitReceive`: both coroutines end instead of holding their threads.
          self.cancel()
        }
      }
      // The pump: a coroutine, because `awaitReceive()` may only block inside one. It
      // gives its thread back to the queue while it waits.
      DispatchQueue.global().startCoroutine {
        do {
          while true {
            continuation.yield(try self.awaitReceive())
          }
        } catch CoChannelError.closed {
          continuation.finish()
        } catch {
          // `for element in channel` would end quietly here too; awaiting each element
          // tells a cancelled channel apart from a closed one.
          continuation.finish(throwing: error)
        }
      }
    }
  }
}
