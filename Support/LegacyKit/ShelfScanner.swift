import Dispatch
import Foundation

/// Told about a ``ShelfScanner``'s session: started, interrupted, resumed, stopped.
///
/// Always called on the main queue, asynchronously (posted there, never inside the call
/// that caused the event), one event at a time, in the order they happened. The scanner
/// redraws its camera preview right after each method returns, so whatever the event
/// changes on screen must have changed by then.
public protocol ShelfScannerSessionDelegate: AnyObject {
  /// The camera is running: labels may be read from now on.
  func shelfScannerDidStartRunning(_ scanner: ShelfScanner)
  /// The camera was taken away (a phone call, another app): no label is read until
  /// ``shelfScannerInterruptionEnded(_:)``.
  func shelfScanner(_ scanner: ShelfScanner, wasInterruptedBy reason: ShelfScanner.Interruption)
  /// The camera is back after an interruption.
  func shelfScannerInterruptionEnded(_ scanner: ShelfScanner)
  /// The camera stopped, after ``ShelfScanner/stopRunning()``: no label follows.
  func shelfScannerDidStopRunning(_ scanner: ShelfScanner)
}

/// Handed each shelf label a ``ShelfScanner`` reads.
///
/// Called on the scanner's decoding queue, a background queue (never the main queue), one
/// label at a time, in the order the camera read them. The decoding queue waits while the
/// method runs, and the camera drops frames meanwhile: return quickly.
public protocol ShelfScannerLabelDelegate: AnyObject {
  /// The camera read `label`, a shelf label's barcode. The same label read again (the clerk
  /// scans it twice) is reported again.
  func shelfScanner(_ scanner: ShelfScanner, didRead label: String)
}

/// A camera that reads the barcodes of shelf labels, in a stock-taking app.
///
/// It decodes frames on a decoding queue of its own and hands each label to its
/// ``labelDelegate`` there; it tells its ``sessionDelegate`` about the session on the main
/// queue. Everything it reports goes through the decoding queue first, so the two
/// delegates hear about things in the order they happened: a label read before an
/// interruption reaches the label delegate before the interruption is posted to the main
/// queue. Both delegates are held weakly. Thread-safe: call it from any thread.
///
/// There is no real camera: tests play its part with ``read(_:)``, ``interrupt(_:)`` and
/// ``endInterruption()``, see what its preview shows with ``onRedraw``, and wait for it with
/// ``whenReported(_:)``.
public final class ShelfScanner: @unchecked Sendable {
  /// Why the camera was taken away.
  public enum Interruption: Sendable, Equatable, CustomStringConvertible {
    /// A phone call came in.
    case phoneCall
    /// Another app took the camera.
    case cameraInUseByAnotherApp

    public var description: String {
      switch self {
      case .phoneCall: return "a phone call"
      case .cameraInUseByAnotherApp: return "another app using the camera"
      }
    }
  }

  /// A session event, as the preview redraw is told.
  public enum SessionEvent: Sendable, Equatable, CustomStringConvertible {
    case started
    case interrupted(Interruption)
    case interruptionEnded
    case stopped

    /// The session delegate's method that reports it.
    public var description: String {
      switch self {
      case .started: return "shelfScannerDidStartRunning(_:)"
      case .interrupted(let reason): return "shelfScanner(_:wasInterruptedBy: \(reason))"
      case .interruptionEnded: return "shelfScannerInterruptionEnded(_:)"
      case .stopped: return "shelfScannerDidStopRunning(_:)"
      }
    }
  }

  private let lock = NSLock()
  private let decodingQueue = DispatchQueue(label: "ShelfScanner.decoding")
  private weak var storedSessionDelegate: ShelfScannerSessionDelegate?
  private weak var storedLabelDelegate: ShelfScannerLabelDelegate?
  private var started = 0
  private var delivered = 0
  private var redraw: (@MainActor (SessionEvent) -> Void)?

  public init() {}

  /// Told about the session, on the main queue. Held weakly.
  public var sessionDelegate: ShelfScannerSessionDelegate? {
    get {
      lock.lock()
      defer { lock.unlock() }
      return storedSessionDelegate
    }
    set {
      lock.lock()
      defer { lock.unlock() }
      storedSessionDelegate = newValue
    }
  }

  /// Handed each label, on the decoding queue. Held weakly.
  public var labelDelegate: ShelfScannerLabelDelegate? {
    get {
      lock.lock()
      defer { lock.unlock() }
      return storedLabelDelegate
    }
    set {
      lock.lock()
      defer { lock.unlock() }
      storedLabelDelegate = newValue
    }
  }

  /// For tests: the preview's redraw after each session event. Called on the main queue, in
  /// the same block as the session delegate's method, right after it returned (whether or not
  /// there is a delegate), with the event: what the screen shows then is what the preview
  /// shows.
  public var onRedraw: (@MainActor (SessionEvent) -> Void)? {
    get {
      lock.lock()
      defer { lock.unlock() }
      return redraw
    }
    set {
      lock.lock()
      defer { lock.unlock() }
      redraw = newValue
    }
  }

  /// How many labels the scanner has started to hand to the label delegate (it called the
  /// method, which may not have returned yet).
  public var labelsStarted: Int {
    lock.lock()
    defer { lock.unlock() }
    return started
  }

  /// How many labels have been handed to the label delegate so far (its method returned).
  public var labelsDelivered: Int {
    lock.lock()
    defer { lock.unlock() }
    return delivered
  }

  /// Starts the camera; the session delegate hears
  /// ``ShelfScannerSessionDelegate/shelfScannerDidStartRunning(_:)`` on the main queue.
  public func startRunning() {
    post(.started) { $0.shelfScannerDidStartRunning(self) }
  }

  /// Stops the camera once the labels already read have been reported; the session delegate
  /// then hears ``ShelfScannerSessionDelegate/shelfScannerDidStopRunning(_:)`` on the main
  /// queue.
  public func stopRunning() {
    post(.stopped) { $0.shelfScannerDidStopRunning(self) }
  }

  // MARK: The camera's side, played by tests.

  /// The camera read `labels`, in this order: each is handed to the label delegate on the
  /// decoding queue. Returns at once.
  public func read(_ labels: [String]) {
    decodingQueue.async {
      for label in labels {
        self.lock.lock()
        self.started += 1
        self.lock.unlock()
        self.labelDelegate?.shelfScanner(self, didRead: label)
        self.lock.lock()
        self.delivered += 1
        self.lock.unlock()
      }
    }
  }

  /// The camera was taken away: the session delegate hears it on the main queue, after the
  /// labels read before.
  public func interrupt(_ reason: Interruption) {
    post(.interrupted(reason)) { $0.shelfScanner(self, wasInterruptedBy: reason) }
  }

  /// The camera is back: the session delegate hears it on the main queue.
  public func endInterruption() {
    post(.interruptionEnded) { $0.shelfScannerInterruptionEnded(self) }
  }

  /// Calls `done` on the decoding queue once everything asked of the scanner before this
  /// call has been reported: each label handed to the label delegate (and its method
  /// returned), each session event posted to the main queue (it runs there later).
  public func whenReported(_ done: @escaping @Sendable () -> Void) {
    decodingQueue.async(execute: done)
  }

  /// Posts a session event to the main queue, from the decoding queue, behind the labels
  /// read before it; the preview redraws right after the delegate's method returns.
  private func post(
    _ kind: SessionEvent, _ event: @escaping (ShelfScannerSessionDelegate) -> Void
  ) {
    let event = UncheckedSendable(event)
    decodingQueue.async {
      DispatchQueue.main.async {
        if let delegate = self.sessionDelegate { event.value(delegate) }
        self.onRedraw?(kind)
      }
    }
  }
}
