import Foundation
import LegacyKit
import Synchronization

/// Listens to a vibration sensor for the maintenance dashboard, the delegate way.
///
/// Readings wait in a queue until the dashboard takes them. The queue holds at most
/// `capacity`: when it is full the sensor is paused (its hardware holds the readings back,
/// none is lost), and once the dashboard has taken half of them the sensor is resumed. A
/// sensor that drops out is started again. The dashboard hears of new readings through
/// `onAvailable` and of the end through `onEnd` (nil when the session is over).
///
///     monitor.onAvailable = { draw(monitor.take()) }
///     monitor.onEnd = { error in showEnd(error) }
///     monitor.start()
///     …
///     monitor.stop()  // the dashboard was closed
final class VibrationMonitor: VibrationSensorDelegate, @unchecked Sendable {
  private let sensor: VibrationSensor
  private let capacity: Int
  private let lock = NSLock()
  private var waiting: [Vibration] = []
  private var paused = false
  var onAvailable: (@Sendable () -> Void)?
  var onEnd: (@Sendable ((any Error)?) -> Void)?

  init(sensor: VibrationSensor, capacity: Int) {
    precondition(capacity >= 2, "the queue must hold at least two readings")
    self.sensor = sensor
    self.capacity = capacity
  }

  func start() {
    sensor.delegate = self
    sensor.start()
  }

  func stop() {
    sensor.stop()
    // A pause survives a restart: lift ours, so that the next start is not held back.
    lock.lock()
    if paused {
      paused = false
      sensor.resume()
    }
    lock.unlock()
    sensor.delegate = nil
  }

  /// Takes up to `count` waiting readings, oldest first.
  func take(upTo count: Int = .max) -> [Vibration] {
    lock.lock()
    defer { lock.unlock() }
    let batch = Array(waiting.prefix(count))
    waiting.removeFirst(batch.count)
    // Under the lock, so that a pause and a resume can never swap places.
    if paused && waiting.count <= capacity / 2 {
      paused = false
      sensor.resume()
    }
    return batch
  }

  func sensor(_ sensor: VibrationSensor, didMeasure reading: Vibration) {
    lock.lock()
    waiting.append(reading)
    if !paused && waiting.count >= capacity {
      paused = true
      sensor.pause()
    }
    lock.unlock()
    onAvailable?()
  }

  func sensor(_ sensor: VibrationSensor, didStop reason: SensorStop) {
    switch reason {
    case .interrupted: sensor.start()
    case .finished: onEnd?(nil)
    case .failed(let error): onEnd?(error)
    }
  }
}

// MARK: The async way

/// Every reading `sensor` sends from now on, oldest first, for as long as the caller
/// iterates.
///
/// This answer has no AsyncThrowingStream: the sequence keeps its own buffer and hands a
/// reading to a waiting `next()` through a continuation. Reading from its own buffer, it
/// knows when a value is read, which is what resuming the sensor needs.
func vibrations(
  from sensor: VibrationSensor, capacity: Int
) -> some AsyncSequence<
  Vibration, any Error
> {
  let feed = BufferedFeed(sensor: sensor, capacity: capacity)
  feed.start()
  return Readings(lifetime: Lifetime(feed))
}

/// Stops the feed when the sequence and every iterator of it are gone: a break, or a
/// sequence dropped unread. It also keeps the feed alive, since the sensor holds it weakly.
private final class Lifetime: Sendable {
  let feed: BufferedFeed
  init(_ feed: BufferedFeed) { self.feed = feed }
  deinit { feed.stop() }
}

private struct Readings: AsyncSequence {
  typealias Element = Vibration
  typealias Failure = any Error

  let lifetime: Lifetime

  func makeAsyncIterator() -> Iterator { Iterator(lifetime: lifetime) }

  struct Iterator: AsyncIteratorProtocol {
    typealias Element = Vibration
    typealias Failure = any Error

    let lifetime: Lifetime

    mutating func next() async throws -> Vibration? {
      let feed = lifetime.feed
      return try await withTaskCancellationHandler {
        try await feed.next()
      } onCancel: {
        feed.cancel()
      }
    }
  }
}

private final class BufferedFeed: VibrationSensorDelegate, Sendable {
  private struct State {
    var buffer: [Vibration] = []
    var paused = false
    var waiter: CheckedContinuation<Vibration?, any Error>?
    /// Set once the sequence is over: nil ends it, an error is thrown once and then nil.
    var end: (any Error)?? = .none
    var cancelled = false
    var stopped = false
  }

  private let sensor: VibrationSensor
  private let capacity: Int
  private let state = Mutex(State())

  init(sensor: VibrationSensor, capacity: Int) {
    self.sensor = sensor
    self.capacity = capacity
  }

  func start() {
    sensor.delegate = self
    sensor.start()
  }

  func stop() {
    sensor.stop()
    // The sensor keeps a pause across a restart: lift ours, for the next sequence's sake,
    // and let no reading still on its way pause it again.
    state.withLock { state in
      state.stopped = true
      if state.paused {
        state.paused = false
        sensor.resume()
      }
    }
    sensor.delegate = nil
  }

  /// A task cancelled while reading: the sequence ends, and the sensor stops.
  func cancel() {
    let waiter = state.withLock { state in
      state.cancelled = true
      return state.waiter.take()
    }
    stop()
    waiter?.resume(returning: nil)
  }

  func next() async throws -> Vibration? {
    try await withCheckedThrowingContinuation { continuation in
      let answer = state.withLock { state -> Result<Vibration?, any Error>? in
        if !state.buffer.isEmpty {
          let reading = state.buffer.removeFirst()
          // Under the lock, so that a pause and a resume can never swap places.
          if state.paused && state.buffer.count <= capacity / 2 {
            state.paused = false
            sensor.resume()
          }
          return .success(reading)
        }
        if state.cancelled { return .success(nil) }
        if case .some(let end) = state.end {
          state.end = .some(nil)
          return end.map { .failure($0) } ?? .success(nil)
        }
        state.waiter = continuation
        return nil
      }
      if let answer { continuation.resume(with: answer) }
    }
  }

  func sensor(_ sensor: VibrationSensor, didMeasure reading: Vibration) {
    let waiter = state.withLock { state -> CheckedContinuation<Vibration?, any Error>? in
      if let waiter = state.waiter.take() { return waiter }
      state.buffer.append(reading)
      if !state.paused && !state.stopped && state.buffer.count >= capacity {
        state.paused = true
        sensor.pause()
      }
      return nil
    }
    waiter?.resume(returning: reading)
  }

  func sensor(_ sensor: VibrationSensor, didStop reason: SensorStop) {
    let error: (any Error)?
    switch reason {
    case .interrupted: return sensor.start()
    case .finished: error = nil
    case .failed(let failure): error = failure
    }
    let waiter = state.withLock { state -> CheckedContinuation<Vibration?, any Error>? in
      // A waiter means the buffer is empty: it gets the end now.
      guard let waiter = state.waiter.take() else {
        state.end = .some(error)
        return nil
      }
      state.end = .some(nil)
      return waiter
    }
    if let error { waiter?.resume(throwing: error) } else { waiter?.resume(returning: nil) }
  }
}
