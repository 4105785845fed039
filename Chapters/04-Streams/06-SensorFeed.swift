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
  // TODO: Give the dashboard this sequence instead of the monitor's callbacks, with the same
  // rules: the sensor is paused while `capacity` readings wait unread and resumed once half
  // of them have been read (no reading is ever dropped), restarted when it drops out,
  // stopped when the caller stops iterating; the sequence ends when the session is over, or
  // throws the sensor's error. Hint: an AsyncThrowingStream alone never learns when the
  // caller reads a value.
  AsyncThrowingStream { $0.finish(throwing: Unfinished()) }
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
