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
      continuation.onTermination = { termination in
        if case .cancelled = termination {
          self.cancel()  // also fails the receive callback still waiting below
        }
      }
      // Callback-driven: one `whenReceive` outstanding at a time, so the order is the
      // channel's, and no thread is parked while the channel is empty.
      ElementPump(channel: self, continuation: continuation).receiveNext()
    }
  }
}

/// Takes the channel's elements one `whenReceive` at a time and yields them.
private struct ElementPump<Element: Sendable>: Sendable {
  let channel: CoChannel<Element>
  let continuation: AsyncThrowingStream<Element, any Error>.Continuation

  func receiveNext() {
    channel.whenReceive { result in
      switch result {
      case .success(let element):
        continuation.yield(element)
        // The callback may run at once, inside `whenReceive`: ask for the next element
        // from a fresh stack frame rather than recursing once per buffered element.
        DispatchQueue.global().async { receiveNext() }
      case .failure(.closed):
        continuation.finish()
      case .failure(let error):
        continuation.finish(throwing: error)
      }
    }
  }
}
