import Foundation

/// One measurement of a ``VibrationSensor``.
public struct Vibration: Equatable, Sendable, CustomStringConvertible {
  /// 1 for the sensor's first reading, counting on across stops and restarts.
  public let number: Int
  /// How strongly the machine shook, in mm/s.
  public let amplitude: Double

  public init(number: Int, amplitude: Double) {
    self.number = number
    self.amplitude = amplitude
  }

  public var description: String { "reading #\(number)" }
}

/// Why a ``VibrationSensor`` stopped on its own.
public enum SensorStop: Sendable {
  /// The measuring session is over: no more readings will come.
  case finished
  /// The sensor dropped out (a radio hiccup, a power-saving nap). Calling
  /// ``VibrationSensor/start()`` again goes on measuring where it stopped.
  case interrupted
  /// The sensor broke down.
  case failed(Error)
}

/// What a ``VibrationSensor`` tells the object that listens to it.
public protocol VibrationSensorDelegate: AnyObject {
  /// A new reading, on the sensor's own queue.
  func sensor(_ sensor: VibrationSensor, didMeasure reading: Vibration)
  /// The sensor stopped on its own (never after ``VibrationSensor/stop()``).
  func sensor(_ sensor: VibrationSensor, didStop reason: SensorStop)
}

/// A vibration sensor bolted to a machine, with a delegate SDK in the style of the classic
/// hardware frameworks.
///
/// ``start()`` starts measuring: readings arrive one by one, on the sensor's own serial
/// queue, every `interval`. ``stop()`` stops it. The sensor has hardware flow control:
/// ``pause()`` holds back the readings (none is lost; they come after ``resume()``), which
/// is how an app that cannot keep up tells the sensor to wait. A pause survives a restart.
///
/// What each start does comes from a script of runs: so many readings, then the run ends
/// finished, interrupted (start again to go on) or failed. A sensor that logged its readings
/// while nobody listened (`sendsRunInsideStart`) sends a whole run, and its end, inside
/// ``start()``, one right after the other. Everything is counted, so a test
/// can see whether the sensor is running, paused, how many readings it has sent, and how
/// often it was started, stopped and paused. Thread-safe. The delegate is held weakly.
public final class VibrationSensor: @unchecked Sendable {
  /// What one ``start()`` does.
  public struct Run: Sendable {
    /// How many readings it sends.
    public var readings: Int
    /// How it ends after them.
    public var end: SensorStop

    public init(readings: Int, then end: SensorStop) {
      self.readings = readings
      self.end = end
    }
  }

  /// The amplitude of reading `number`: the same every time, so tests can check it.
  public static func amplitude(of number: Int) -> Double {
    Double(number % 17) / 4
  }

  /// Held weakly, like every delegate of this era.
  public var delegate: VibrationSensorDelegate? {
    get { locked { storedDelegate } }
    set { locked { storedDelegate = newValue } }
  }

  private let runs: [Run]
  private let interval: Duration
  private let measuresInsideStart: Bool
  private let sendsRunInsideStart: Bool
  private let pauseTakes: Duration
  private let afterDropOut: (@Sendable (VibrationSensor) -> Void)?
  /// The thread delivering a drop-out while `afterDropOut` runs; a start() from any other
  /// thread waits until it is nil again.
  private var finishingDropOut: pthread_t?
  private let dropOutGate = NSCondition()
  private let queue = DispatchQueue(label: "VibrationSensor")
  private let lock = NSLock()
  private weak var storedDelegate: VibrationSensorDelegate?
  private var running = false
  private var paused = false
  private var generation = 0
  private var runIndex = 0
  private var left = 0
  private var sent = 0
  private var startCount = 0
  private var stopCount = 0
  private var pauseCount = 0
  private var pausesOnTheirWay = 0
  /// The thread of each call of ``start()`` that started a run.
  private var startingThreads: [pthread_t] = []

  /// - Parameters:
  ///   - runs: What each start does, in order; starts past the end repeat the last run.
  ///   - interval: The time between two readings.
  ///   - measuresInsideStart: Whether a run's first reading is sent inside ``start()``, on
  ///     the caller's thread, before it returns (the sensor had it ready).
  ///   - sendsRunInsideStart: Whether a run's readings, and then its end, are all sent inside
  ///     ``start()``, on the caller's thread, back to back, before it returns (a data logger
  ///     emptying its memory). A ``pause()`` meanwhile holds back the rest, which come on the
  ///     sensor's queue after ``resume()``, every `interval`.
  ///   - pauseTakes: How long ``pause()`` takes to reach the hardware: the call returns, and
  ///     the readings stop, only after this long (a resume that comes meanwhile finds the
  ///     sensor not yet paused, and does nothing).
  ///   - afterDropOut: Called on the sensor's queue right after the delegate's
  ///     `didStop(.interrupted)` returns, while the sensor is still busy with its drop-out: a
  ///     ``start()`` from another thread meanwhile waits until it returns (at most 5 seconds).
  ///     A test can end a sequence there, after the drop-out and before a restart that the
  ///     delegate left to another thread.
  public init(
    runs: [Run], interval: Duration = .milliseconds(1), measuresInsideStart: Bool = false,
    sendsRunInsideStart: Bool = false, pauseTakes: Duration = .zero,
    afterDropOut: (@Sendable (VibrationSensor) -> Void)? = nil
  ) {
    precondition(!runs.isEmpty, "a sensor needs at least one run")
    self.runs = runs
    self.interval = interval
    self.measuresInsideStart = measuresInsideStart
    self.sendsRunInsideStart = sendsRunInsideStart
    self.pauseTakes = pauseTakes
    self.afterDropOut = afterDropOut
  }

  /// Whether the sensor is measuring (paused or not).
  public var isRunning: Bool { locked { running } }
  /// Whether ``pause()`` is holding back the readings.
  public var isPaused: Bool { locked { paused } }
  /// How many readings the sensor has sent to its delegate.
  public var readingsSent: Int { locked { sent } }
  /// How many times ``start()`` has started a run.
  public var starts: Int { locked { startCount } }
  /// How many times ``stop()`` has been called.
  public var stops: Int { locked { stopCount } }
  /// How many times ``pause()`` has paused the sensor.
  public var pauses: Int { locked { pauseCount } }
  /// Whether a ``pause()`` is on its way to the hardware (see `pauseTakes`): called, and
  /// not yet landed.
  public var isPausing: Bool { locked { pausesOnTheirWay > 0 } }
  /// Whether a call of ``start()`` on this thread started a run: asked right after a call
  /// that promises to start the sensor, it tells whether that call started it itself, or
  /// left it to another thread (a task, a queue) that may do it before or after the call
  /// returns.
  public var wasStartedOnThisThread: Bool {
    let me = pthread_self()
    return locked { startingThreads.contains { pthread_equal($0, me) != 0 } }
  }

  /// Starts measuring: the next run of the script. Does nothing if the sensor is running.
  public func start() {
    waitUntilTheDropOutIsOver()
    let started: Int? = locked {
      guard !running else { return nil }
      running = true
      startCount += 1
      startingThreads.append(pthread_self())
      generation += 1
      left = runs[min(runIndex, runs.count - 1)].readings
      runIndex += 1
      return generation
    }
    guard let generation = started else { return }
    if sendsRunInsideStart {
      // Until the run ends, or a pause or a stop interrupts it (a resume goes on from there).
      while tick(generation, scheduleNext: false) == .measured {}
      return
    }
    if measuresInsideStart {
      tick(generation, scheduleNext: false)
    }
    schedule(generation)
  }

  /// Stops measuring. No reading and no `didStop` comes after this returns, unless a
  /// reading was already being delivered on the sensor's queue.
  public func stop() {
    locked {
      stopCount += 1
      running = false
      generation += 1
    }
  }

  /// Holds back the readings until ``resume()``. None is lost.
  public func pause() {
    locked { pausesOnTheirWay += 1 }
    if pauseTakes > .zero { Thread.sleep(forTimeInterval: pauseTakes.timeInterval) }
    locked {
      pausesOnTheirWay -= 1
      guard !paused else { return }
      paused = true
      pauseCount += 1
    }
  }

  /// Sends the readings held back by ``pause()``, and goes on measuring.
  public func resume() {
    let resumed: Int? = locked {
      guard paused else { return nil }
      paused = false
      guard running else { return nil }
      generation += 1
      return generation
    }
    if let generation = resumed { schedule(generation) }
  }

  private func schedule(_ generation: Int) {
    if interval <= .zero {
      queue.async { self.tick(generation) }
    } else {
      queue.asyncAfter(deadline: .now() + interval.timeInterval) { self.tick(generation) }
    }
  }

  private enum Step {
    case measure(Vibration)
    case end(SensorStop)
  }

  /// What one tick did.
  private enum Ticked {
    case measured, ended, nothing
  }

  @discardableResult
  private func tick(_ generation: Int, scheduleNext: Bool = true) -> Ticked {
    let step: Step? = locked {
      guard running, !paused, generation == self.generation else { return nil }
      if left > 0 {
        left -= 1
        sent += 1
        return .measure(Vibration(number: sent, amplitude: Self.amplitude(of: sent)))
      }
      running = false
      self.generation += 1
      return .end(runs[min(runIndex - 1, runs.count - 1)].end)
    }
    switch step {
    case .measure(let reading)?:
      delegate?.sensor(self, didMeasure: reading)
      if scheduleNext { schedule(generation) }
      return .measured
    case .end(let reason)?:
      guard case .interrupted = reason, let afterDropOut else {
        delegate?.sensor(self, didStop: reason)
        return .ended
      }
      // Closed before the delegate hears of it, so that only its own thread gets through.
      dropOutGate.withLock { finishingDropOut = pthread_self() }
      delegate?.sensor(self, didStop: reason)
      afterDropOut(self)
      dropOutGate.withLock {
        finishingDropOut = nil
        dropOutGate.broadcast()
      }
      return .ended
    case nil:
      return .nothing
    }
  }

  /// See `afterDropOut`.
  private func waitUntilTheDropOutIsOver() {
    let me = pthread_self()
    let giveUp = Date(timeIntervalSinceNow: 5)
    dropOutGate.lock()
    while let holder = finishingDropOut, pthread_equal(holder, me) == 0,
      dropOutGate.wait(until: giveUp)
    {}
    dropOutGate.unlock()
  }

  private func locked<T>(_ body: () throws -> T) rethrows -> T {
    lock.lock()
    defer { lock.unlock() }
    return try body()
  }
}
