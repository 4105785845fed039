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
/// iterates: `for try await reading in vibrations(from: sensor, capacity: 64) { … }`.
///
/// Starts the sensor. At most `capacity` readings wait unread: when the caller falls
/// behind, the sensor is paused, and resumed once the caller has read half of them, so no
/// reading is lost. A sensor that drops out is started again. The sequence ends when the
/// session is over, throws the sensor's error if it fails, and stops the sensor when the
/// iteration ends early (a break, a cancelled task).
func vibrations(
  from sensor: VibrationSensor, capacity: Int
) -> some AsyncSequence<
  Vibration, any Error
> {
  precondition(capacity >= 2, "at least two readings must be able to wait")
  // An unbounded stream: the buffer never drops a reading. Its size is kept in check by
  // pausing the sensor, which only the feed below can do, because only it counts what was
  // yielded and what was read.
  let (stream, continuation) = AsyncThrowingStream.makeStream(of: Vibration.self)
  let feed = VibrationFeed(sensor: sensor, capacity: capacity, continuation: continuation)
  feed.start()
  return Vibrations(stream: stream, feed: feed)
}

/// The readings, as the caller sees them: the stream's values, with each one that is read
/// reported to the feed. That report is the one thing an AsyncThrowingStream does not give
/// its producer, and back-pressure needs it to know when to resume the sensor.
struct Vibrations: AsyncSequence {
  typealias Element = Vibration
  typealias Failure = any Error

  fileprivate let stream: AsyncThrowingStream<Vibration, any Error>
  fileprivate let feed: VibrationFeed

  func makeAsyncIterator() -> Iterator {
    Iterator(base: stream.makeAsyncIterator(), feed: feed)
  }

  struct Iterator: AsyncIteratorProtocol {
    typealias Element = Vibration
    typealias Failure = any Error

    fileprivate var base: AsyncThrowingStream<Vibration, any Error>.Iterator
    fileprivate let feed: VibrationFeed

    mutating func next() async throws -> Vibration? {
      guard let reading = try await base.next() else { return nil }
      feed.wasRead()
      return reading
    }
  }
}

/// The sensor's delegate for one sequence: yields its readings, applies the back-pressure,
/// restarts it when it drops out, and stops it when the sequence ends.
private final class VibrationFeed: VibrationSensorDelegate, Sendable {
  private let sensor: VibrationSensor
  private let capacity: Int
  private let continuation: AsyncThrowingStream<Vibration, any Error>.Continuation
  /// Readings yielded and not yet read, whether this feed has paused the sensor, and
  /// whether the sequence has ended.
  private let state = Mutex((unread: 0, paused: false, ended: false))

  init(
    sensor: VibrationSensor, capacity: Int,
    continuation: AsyncThrowingStream<Vibration, any Error>.Continuation
  ) {
    self.sensor = sensor
    self.capacity = capacity
    self.continuation = continuation
  }

  func start() {
    // However the sequence ends (the caller breaks or is cancelled, the sequence is
    // dropped, or finish below), the sensor stops. The closure also keeps this feed alive:
    // the sensor holds its delegate weakly. Both are set before start(), which may report.
    continuation.onTermination = { _ in self.stop() }
    sensor.delegate = self
    sensor.start()
  }

  private func stop() {
    sensor.stop()
    // A pause survives a restart: lift this feed's own, or the next sequence on this sensor
    // would start it held back, and wait forever. Under the lock, and marked ended, so that
    // a reading still being delivered cannot pause it again.
    state.withLock { state in
      state.ended = true
      if state.paused {
        state.paused = false
        sensor.resume()
      }
    }
    sensor.delegate = nil
  }

  /// The caller has read one reading: resume the sensor once half the buffer is free.
  func wasRead() {
    // pause() and resume() are called under the lock, so that a pause decided on the
    // sensor's queue and a resume decided by the reader can never swap places (a pause
    // landing after the resume would hold the sensor back for good). They are safe to call
    // there: neither calls back into this feed.
    state.withLock { state in
      state.unread -= 1
      if state.paused && state.unread <= capacity / 2 {
        state.paused = false
        sensor.resume()
      }
    }
  }

  func sensor(_ sensor: VibrationSensor, didMeasure reading: Vibration) {
    // Counted before it is yielded, so that the reader's wasRead() never comes first.
    state.withLock { state in
      state.unread += 1
      if !state.paused && !state.ended && state.unread >= capacity {
        state.paused = true
        sensor.pause()
      }
    }
    continuation.yield(reading)
  }

  func sensor(_ sensor: VibrationSensor, didStop reason: SensorStop) {
    switch reason {
    // A drop-out is not the end: go on measuring. (A pause survives it.)
    case .interrupted: sensor.start()
    // The end of the sequence: the reader's loop ends after the last reading.
    case .finished: continuation.finish()
    case .failed(let error): continuation.finish(throwing: error)
    }
  }
}
