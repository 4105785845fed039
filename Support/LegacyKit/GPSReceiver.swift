import Foundation

/// The errors a ``GPSReceiver`` reports to its delegate's
/// ``GPSReceiverDelegate/gpsReceiver(_:didFailWithError:)``.
public enum GPSError: Error, Equatable, Sendable {
  /// Too few satellites in view (a tunnel, a canyon of tall buildings).
  case signalLost
  /// The antenna stopped answering.
  case antennaFault
}

/// One thing a ``GPSReceiver`` reports while it is on.
public enum GPSReading: Sendable, CustomStringConvertible {
  /// New locations, oldest first. A receiver that was busy reports several at once.
  case locations([Location])
  /// A failure.
  case failure(GPSError)

  public var description: String {
    switch self {
    case .locations(let locations): return "locations \(locations)"
    case .failure(let error): return "failure \(error)"
    }
  }
}

/// The delegate of a ``GPSReceiver``.
public protocol GPSReceiverDelegate: AnyObject {
  /// New locations, oldest first: the last one is the most recent.
  func gpsReceiver(_ receiver: GPSReceiver, didUpdateLocations locations: [Location])
  /// Locating failed. Optional: the default implementation does nothing. The receiver does
  /// not stop by itself; it keeps trying until it is told to stop.
  func gpsReceiver(_ receiver: GPSReceiver, didFailWithError error: Error)
}

extension GPSReceiverDelegate {
  public func gpsReceiver(_ receiver: GPSReceiver, didFailWithError error: Error) {}
}

/// A satellite receiver that reports the user's location continuously, in the CoreLocation
/// style: ``startUpdatingLocation()`` turns it on, and it reports to its delegate until
/// ``stopUpdatingLocation()`` turns it off. Nothing else stops it, not even a failure.
///
/// While on, it makes its scripted readings in order, one every `interval`, and then stays on,
/// silent, as a receiver does when the user stands still. Each start begins the readings
/// again from the first. Once ``stopUpdatingLocation()`` has returned, no report begins.
///
/// The receiver holds its ``delegate`` **weakly** and reports to whichever delegate is set
/// when a report is due. Reports arrive one at a time, in order, on the receiver's own serial
/// queue; the script decides when the first one comes (inside ``startUpdatingLocation()`` for
/// a synchronous script, the rest follow on the queue) and how many times each is made (0: the
/// receiver never gets a fix). Thread-safe, and it can be started again after a stop.
public final class GPSReceiver: @unchecked Sendable {
  private let lock = NSLock()
  private let queue = DispatchQueue(label: "LegacyKit.GPSReceiver")
  private let readings: [GPSReading]
  private let interval: Duration
  private let script: CallbackScript
  private weak var storedDelegate: GPSReceiverDelegate?
  private var updating = false
  /// Which start the scheduled reports belong to; a stop or a new start makes them stale.
  private var session = 0
  private var starts = 0
  private var stops = 0
  private var reports = 0
  private var unheard = 0

  /// - Parameters:
  ///   - readings: What each start reports, in order.
  ///   - interval: The time between two readings.
  ///   - script: When the first reading comes, on which thread, and how many times each
  ///     reading is reported.
  public init(
    readings: [GPSReading], interval: Duration = .milliseconds(20),
    script: CallbackScript = .default
  ) {
    self.readings = readings
    self.interval = interval
    self.script = script
  }

  /// Told about every reading. Held weakly.
  public var delegate: GPSReceiverDelegate? {
    get {
      lock.lock()
      defer { lock.unlock() }
      return storedDelegate
    }
    set {
      lock.lock()
      defer { lock.unlock() }
      storedDelegate = newValue
    }
  }

  /// Whether the receiver is on: started and not stopped since.
  public var isUpdatingLocation: Bool {
    lock.lock()
    defer { lock.unlock() }
    return updating
  }

  /// How many times ``startUpdatingLocation()`` has been called.
  public var startCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return starts
  }

  /// How many times ``stopUpdatingLocation()`` has been called.
  public var stopCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return stops
  }

  /// How many delegate calls the receiver has made, to any delegate.
  public var reportCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return reports
  }

  /// How many reports the receiver made while it was on and no delegate was set: reports
  /// nobody heard, because the delegate was set after the start (a synchronous script reports
  /// inside the start call, a background one may report before the caller's next line), or
  /// because the delegate was deallocated.
  public var unheardReportCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return unheard
  }

  /// Turns the receiver on: the readings begin again from the first. Starting while it is
  /// already on does nothing.
  public func startUpdatingLocation() {
    lock.lock()
    starts += 1
    let alreadyOn = updating
    if !alreadyOn {
      updating = true
      session += 1
    }
    let current = session
    lock.unlock()
    guard !alreadyOn, !readings.isEmpty, script.times > 0 else { return }

    switch script.timing {
    case .synchronously:
      report(0, in: current)
    case .onBackgroundQueue:
      queue.async { self.report(0, in: current) }
    case .after(let delay):
      queue.asyncAfter(deadline: .now() + delay.timeInterval) { self.report(0, in: current) }
    case .scheduled(let scheduler):
      scheduler.schedule { self.report(0, in: current) }
    }
  }

  /// Turns the receiver off. No report begins after this returns (one already being made
  /// finishes).
  public func stopUpdatingLocation() {
    lock.lock()
    stops += 1
    updating = false
    lock.unlock()
  }

  /// Makes reading `index` of `session`, unless that session is over, and schedules the next.
  private func report(_ index: Int, in session: Int) {
    for _ in 0..<script.times {
      lock.lock()
      let current = updating && self.session == session
      let delegate = storedDelegate
      if current, delegate != nil { reports += 1 }
      if current, delegate == nil { unheard += 1 }
      lock.unlock()
      guard current else { return }
      // Whichever delegate is set now; one that has been deallocated is simply not told.
      guard let delegate = delegate else { continue }
      switch readings[index] {
      case .locations(let locations):
        delegate.gpsReceiver(self, didUpdateLocations: locations)
      case .failure(let error):
        delegate.gpsReceiver(self, didFailWithError: error)
      }
    }
    let next = index + 1
    guard next < readings.count else { return }
    queue.asyncAfter(deadline: .now() + interval.timeInterval) { self.report(next, in: session) }
  }
}
