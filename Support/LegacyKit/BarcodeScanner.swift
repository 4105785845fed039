import Foundation

/// The errors a ``BarcodeScanner`` reports.
public enum ScannerError: Error, Equatable, Sendable {
  /// ``BarcodeScanner/startScanning()`` was called while a scan was already running.
  case busy
  /// The camera could not be opened.
  case cameraUnavailable
}

/// The delegate of a ``BarcodeScanner``: told once how each scan ended.
public protocol BarcodeScannerDelegate: AnyObject {
  /// A code was read; the scan is over.
  func barcodeScanner(_ scanner: BarcodeScanner, didScan code: String)
  /// The scan failed, or could not start (``ScannerError/busy``).
  func barcodeScanner(_ scanner: BarcodeScanner, didFailWithError error: Error)
}

/// A one-shot barcode scanner: start it, and it reports the first code it reads, or why it
/// could not, to its delegate. Then it is idle until started again.
///
/// There is one camera, so one scan at a time: starting while a scan is running does not
/// start a second one, it reports ``ScannerError/busy`` to the delegate. The scanner holds
/// its ``delegate`` weakly.
///
/// Each scan takes the next of its scripted ``Scan``s (the last one repeats), and the script
/// decides when, on which thread and how many times the delegate is told. The scan is over,
/// and the scanner idle again, before the delegate hears the result. Thread-safe.
public final class BarcodeScanner: @unchecked Sendable {
  /// How one scan ends.
  public enum Scan: Sendable, CustomStringConvertible {
    /// A code is read.
    case code(String)
    /// The scan fails.
    case failure(ScannerError)
    /// Nothing is ever in front of the camera: the scan never ends.
    case never

    public var description: String {
      switch self {
      case .code(let code): return "code \(code)"
      case .failure(let error): return "failure \(error)"
      case .never: return "never"
      }
    }
  }

  private let lock = NSLock()
  private let script: CallbackScript
  private var scans: [Scan]
  private weak var storedDelegate: BarcodeScannerDelegate?
  private var scanning = false
  private var starts = 0
  private var rejectedStarts = 0
  private var reports = 0

  /// - Parameters:
  ///   - scans: How each scan ends, in order; the last one repeats.
  ///   - script: When, on which thread and how many times the delegate is told.
  public init(scans: [Scan], script: CallbackScript = .default) {
    precondition(!scans.isEmpty, "script at least one scan")
    self.scans = scans
    self.script = script
  }

  /// Told how each scan ended. Held weakly.
  public var delegate: BarcodeScannerDelegate? {
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

  /// Whether a scan is running.
  public var isScanning: Bool {
    lock.lock()
    let answer = scanning
    let hook = readHook
    lock.unlock()
    hook?()
    return answer
  }

  private var readHook: (@Sendable () -> Void)?

  /// For tests: runs on the reader's thread each time ``isScanning`` has been read, before
  /// the answer is returned. A test can hold one reader there until another has read too,
  /// so that two callers deciding from the same answer do so every run.
  public var onIsScanningRead: (@Sendable () -> Void)? {
    get {
      lock.lock()
      defer { lock.unlock() }
      return readHook
    }
    set {
      lock.lock()
      defer { lock.unlock() }
      readHook = newValue
    }
  }

  /// How many times ``startScanning()`` has been called, including rejected calls.
  public var startCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return starts
  }

  /// How many calls to ``startScanning()`` were rejected as ``ScannerError/busy``.
  public var busyCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return rejectedStarts
  }

  /// How many delegate reports are over (the delegate returned, or there was none).
  public var reportCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return reports
  }

  /// Starts a scan, or reports ``ScannerError/busy`` if one is running.
  public func startScanning() {
    lock.lock()
    starts += 1
    let busy = scanning
    var scan = Scan.never
    if busy {
      rejectedStarts += 1
    } else {
      scanning = true
      scan = scans.count > 1 ? scans.removeFirst() : scans[0]
    }
    lock.unlock()

    if busy {
      tell { $0?.barcodeScanner(self, didFailWithError: ScannerError.busy) }
      return
    }
    if case .never = scan { return }
    var isFirstCall = true
    tell { delegate in
      if isFirstCall {
        // The scan is over before anyone hears about it, so the delegate may start the
        // next one from its callback.
        isFirstCall = false
        self.lock.lock()
        self.scanning = false
        self.lock.unlock()
      }
      switch scan {
      case .code(let code): delegate?.barcodeScanner(self, didScan: code)
      case .failure(let error): delegate?.barcodeScanner(self, didFailWithError: error)
      case .never: break
      }
    }
  }

  /// Calls `call` with the delegate set at that moment, as the script says.
  private func tell(_ call: @escaping (BarcodeScannerDelegate?) -> Void) {
    script.deliver {
      call(self.delegate)
      self.lock.lock()
      self.reports += 1
      self.lock.unlock()
    }
  }
}
