import Foundation

/// A point on Earth.
public struct Location: Hashable, Sendable, CustomStringConvertible {
  public var latitude: Double
  public var longitude: Double

  public init(latitude: Double, longitude: Double) {
    self.latitude = latitude
    self.longitude = longitude
  }

  public var description: String { "Location(\(latitude), \(longitude))" }
}

/// Whether the user lets the app know where they are, as in CoreLocation.
public enum AuthorizationStatus: Sendable, CustomStringConvertible {
  /// The user has not been asked yet.
  case notDetermined
  /// Parental controls or a device policy forbid it; the user cannot change that.
  case restricted
  /// The user said no.
  case denied
  /// The user said yes, while the app is in use.
  case authorizedWhenInUse
  /// The user said yes, always.
  case authorizedAlways

  public var description: String {
    switch self {
    case .notDetermined: return "notDetermined"
    case .restricted: return "restricted"
    case .denied: return "denied"
    case .authorizedWhenInUse: return "authorizedWhenInUse"
    case .authorizedAlways: return "authorizedAlways"
    }
  }
}

/// The errors a ``LocationManager`` reports to its delegate's
/// ``LocationManagerDelegate/locationManager(_:didFailWithError:)``.
public enum LocationError: Error, Equatable, Sendable {
  /// Updates were started without the user's permission (CoreLocation's `kCLErrorDenied`).
  case notAuthorized
  /// No fix could be obtained (no satellites, no network).
  case locationUnavailable
}

/// One thing the manager reports after ``LocationManager/startUpdatingLocation()``.
public enum LocationUpdate: Sendable, CustomStringConvertible {
  case location(Location)
  case failure(LocationError)

  public var description: String {
    switch self {
    case .location(let location): return "\(location)"
    case .failure(let error): return "failure \(error)"
    }
  }
}

/// The delegate of a ``LocationManager``. Every method is optional, as in CoreLocation: the
/// default implementations do nothing.
public protocol LocationManagerDelegate: AnyObject {
  /// The authorization status changed, or the delegate was just set (the manager reports
  /// its status once then, even if it is still ``AuthorizationStatus/notDetermined``).
  func locationManagerDidChangeAuthorization(_ manager: LocationManager)
  /// New locations, oldest first: the last one is the most recent.
  func locationManager(_ manager: LocationManager, didUpdateLocations locations: [Location])
  /// Locating failed, or updates were started without permission.
  func locationManager(_ manager: LocationManager, didFailWithError error: Error)
}

extension LocationManagerDelegate {
  public func locationManagerDidChangeAuthorization(_ manager: LocationManager) {}
  public func locationManager(
    _ manager: LocationManager, didUpdateLocations locations: [Location]
  ) {}
  public func locationManager(_ manager: LocationManager, didFailWithError error: Error) {}
}

/// A location manager in the CoreLocation style, with its authorization flow.
///
/// - Setting a ``delegate`` makes the manager report its ``authorizationStatus`` to it.
/// - ``requestWhenInUseAuthorization()`` asks the user, but only while the status is
///   ``AuthorizationStatus/notDetermined``; the answer arrives later, as a status change.
/// - ``startUpdatingLocation()`` delivers the scripted updates, one delegate call each,
///   back to back: updates already on their way still arrive after
///   ``stopUpdatingLocation()``. Starting without permission reports
///   ``LocationError/notAuthorized`` instead.
///
/// The manager holds its ``delegate`` **weakly** and calls whichever delegate is set when a
/// report is due. Reports arrive one at a time, in order, on the manager's own serial queue
/// (or inside the call, for a synchronous script); the script decides when and how many
/// times each one is made. Thread-safe, and usable for any number of requests.
public final class LocationManager: @unchecked Sendable {
  private let lock = NSLock()
  private let queue = DispatchQueue(label: "LegacyKit.LocationManager")
  private let script: CallbackScript
  private let userAnswer: AuthorizationStatus?
  private let updates: [LocationUpdate]
  private weak var storedDelegate: LocationManagerDelegate?
  private var status: AuthorizationStatus
  private var isAsking = false
  private var updating = false
  private var authorizationRequests = 0
  private var starts = 0
  private var stops = 0
  private var reportsUnderway = 0
  private var reportsToNobody = 0

  /// - Parameters:
  ///   - authorization: The status before anyone asks.
  ///   - userAnswer: What the user answers when asked; `nil` if they never answer.
  ///   - updates: What each ``startUpdatingLocation()`` delivers, in order.
  ///   - script: When, on which thread and how many times each report is made.
  public init(
    authorization: AuthorizationStatus = .notDetermined,
    userAnswer: AuthorizationStatus? = .authorizedWhenInUse,
    updates: [LocationUpdate],
    script: CallbackScript = .default
  ) {
    self.status = authorization
    self.userAnswer = userAnswer
    self.updates = updates
    self.script = script
  }

  /// Held weakly. Setting a delegate makes the manager report its authorization status.
  public var delegate: LocationManagerDelegate? {
    get {
      lock.lock()
      defer { lock.unlock() }
      return storedDelegate
    }
    set {
      lock.lock()
      storedDelegate = newValue
      lock.unlock()
      guard newValue != nil else { return }
      report { $0.locationManagerDidChangeAuthorization(self) }
    }
  }

  /// Whether the user lets the app locate them.
  public var authorizationStatus: AuthorizationStatus {
    lock.lock()
    defer { lock.unlock() }
    return status
  }

  /// Whether updates are on: started and not stopped since.
  public var isUpdatingLocation: Bool {
    lock.lock()
    defer { lock.unlock() }
    return updating
  }

  /// How many times ``requestWhenInUseAuthorization()`` has been called.
  public var authorizationRequestCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return authorizationRequests
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

  /// How many reports are scheduled or being made: 0 once the manager has nothing more to
  /// say. (A report made from inside another report's delegate call is counted before that
  /// one ends, so the count does not touch 0 in between.)
  public var pendingReportCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return reportsUnderway
  }

  /// How many reports found no delegate to tell: none was set yet, or it had been freed.
  public var reportsWithNoDelegate: Int {
    lock.lock()
    defer { lock.unlock() }
    return reportsToNobody
  }

  /// Asks the user for permission, if nobody has asked yet; the delegate hears the answer
  /// as a status change. Does nothing once the status is determined.
  public func requestWhenInUseAuthorization() {
    lock.lock()
    authorizationRequests += 1
    let shouldAsk = status == .notDetermined && !isAsking
    if shouldAsk { isAsking = true }
    lock.unlock()
    guard shouldAsk, let answer = userAnswer else { return }
    report { delegate in
      self.lock.lock()
      self.status = answer
      self.isAsking = false
      self.lock.unlock()
      delegate.locationManagerDidChangeAuthorization(self)
    }
  }

  /// Starts delivering locations, if the user allows it; otherwise reports
  /// ``LocationError/notAuthorized``. Starting again while updates are on does nothing.
  public func startUpdatingLocation() {
    lock.lock()
    starts += 1
    let allowed = status == .authorizedWhenInUse || status == .authorizedAlways
    let alreadyOn = updating
    if allowed { updating = true }
    lock.unlock()

    guard allowed else {
      report { $0.locationManager(self, didFailWithError: LocationError.notAuthorized) }
      return
    }
    guard !alreadyOn else { return }
    for update in updates {
      report { delegate in
        switch update {
        case .location(let location):
          delegate.locationManager(self, didUpdateLocations: [location])
        case .failure(let error):
          delegate.locationManager(self, didFailWithError: error)
        }
      }
    }
  }

  /// Stops updates. Reports already on their way still arrive.
  public func stopUpdatingLocation() {
    lock.lock()
    stops += 1
    updating = false
    lock.unlock()
  }

  /// Makes one report as the script says: to whichever delegate is set at that moment,
  /// `times` times, in order with every other report.
  private func report(_ call: @escaping (LocationManagerDelegate) -> Void) {
    let times = script.times
    guard times > 0 else { return }
    lock.lock()
    reportsUnderway += 1
    lock.unlock()
    let work = {
      for _ in 0..<times {
        // Read the delegate now, not when the report was scheduled: a delegate that has
        // been deallocated in the meantime is simply not told.
        if let delegate = self.delegate {
          call(delegate)
        } else {
          self.lock.lock()
          self.reportsToNobody += 1
          self.lock.unlock()
        }
      }
      self.lock.lock()
      self.reportsUnderway -= 1
      self.lock.unlock()
    }
    // Legacy code hands non-Sendable closures to other threads; that is the point here.
    let box = UncheckedSendable(work)
    switch script.timing {
    case .synchronously:
      work()
    case .onBackgroundQueue:
      queue.async { box.value() }
    case .after(let delay):
      queue.asyncAfter(deadline: .now() + delay.timeInterval) { box.value() }
    case .scheduled(let scheduler):
      scheduler.schedule { box.value() }
    }
  }
}
