import Foundation

/// A smart scale that has been paired with the phone.
public struct PairedScale: Equatable, Sendable, CustomStringConvertible {
  public var name: String
  public var serialNumber: String

  public init(name: String, serialNumber: String) {
    self.name = name
    self.serialNumber = serialNumber
  }

  public var description: String { "\(name) (\(serialNumber))" }
}

/// Why a ``ScalePairingSession`` could not pair.
public enum ScalePairingError: Error, Equatable, Sendable {
  /// The code typed in is not the one the scale shows.
  case wrongCode
  /// The scale went out of Bluetooth range.
  case outOfRange
}

/// The delegate of a ``ScalePairingSession``.
///
/// Progress and cancellation are optional, as such methods often are: the default
/// implementations do nothing, so the compiler never asks for them.
public protocol ScalePairingSessionDelegate: AnyObject {
  /// The pairing got further; `fraction` goes from 0 to 1. Zero or more times, before the
  /// outcome.
  func pairingSession(_ session: ScalePairingSession, didProgress fraction: Double)
  /// The scale is paired.
  func pairingSession(_ session: ScalePairingSession, didPair scale: PairedScale)
  /// The pairing failed.
  func pairingSession(_ session: ScalePairingSession, didFailWithError error: Error)
  /// The pairing was cancelled: on the scale's own button, or with
  /// ``ScalePairingSession/cancel()``.
  func pairingSessionDidCancel(_ session: ScalePairingSession)
}

extension ScalePairingSessionDelegate {
  public func pairingSession(_ session: ScalePairingSession, didProgress fraction: Double) {}
  public func pairingSessionDidCancel(_ session: ScalePairingSession) {}
}

/// Pairs the phone with a smart scale, in the delegate style of its vendor's SDK.
///
/// ``startPairing(code:)`` reports the pairing's progress to the delegate, then its outcome:
/// paired, failed or cancelled. The scale's firmware is not polite about it:
///
/// - the outcome is reported as many times as the script's `times` says (the firmware
///   repeats it when the phone's acknowledgement is lost), progress only the first time;
/// - a scale that pairs may report a failure right after (it went out of range once it had
///   paired), see ``Outcome/pairsThenFails(_:_:)``;
/// - a switched-off scale never answers: only ``cancel()`` ends that pairing.
///
/// The session holds its ``delegate`` **weakly** and calls whichever delegate is set when a
/// report is due, when and on the thread the script says (possibly inside
/// ``startPairing(code:)`` itself). Thread-safe, and usable for any number of pairings, one
/// at a time.
public final class ScalePairingSession: @unchecked Sendable {
  /// How the next pairing ends.
  public enum Outcome: Sendable, CustomStringConvertible {
    /// Paired with this scale.
    case pairs(PairedScale)
    /// Failed with this error.
    case fails(ScalePairingError)
    /// Someone pressed Cancel on the scale.
    case cancelledOnTheScale
    /// Paired, then reports a failure right after.
    case pairsThenFails(PairedScale, ScalePairingError)
    /// Never answers (the scale is switched off): only ``ScalePairingSession/cancel()`` ends
    /// the pairing.
    case noAnswer

    public var description: String {
      switch self {
      case .pairs(let scale): return "pairs with \(scale)"
      case .fails(let error): return "fails with \(error)"
      case .cancelledOnTheScale: return "cancelled on the scale"
      case .pairsThenFails(let scale, let error):
        return "pairs with \(scale), then fails with \(error)"
      case .noAnswer: return "never answers"
      }
    }
  }

  private let lock = NSLock()
  private let script: CallbackScript
  private weak var storedDelegate: ScalePairingSessionDelegate?
  private var _outcome: Outcome
  private var _progress: [Double]
  private var pairing = 0  // the number of the pairing underway; 0 when none is
  private var pairings = 0
  private var lastCancelled = 0  // the number of the last pairing cancel() ended
  private var cancels = 0

  /// - Parameters:
  ///   - outcome: How the next pairing ends.
  ///   - progress: The progress each pairing reports before its outcome, in order.
  ///   - script: When and on which thread the reports are made, and how many times the
  ///     outcome is repeated.
  public init(
    outcome: Outcome, progress: [Double] = [0.25, 0.5, 0.75], script: CallbackScript = .default
  ) {
    self._outcome = outcome
    self._progress = progress
    self.script = script
  }

  /// Who hears the reports. Held weakly.
  public var delegate: ScalePairingSessionDelegate? {
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

  /// How the next pairing ends; it may be changed between pairings.
  public var outcome: Outcome {
    get {
      lock.lock()
      defer { lock.unlock() }
      return _outcome
    }
    set {
      lock.lock()
      defer { lock.unlock() }
      _outcome = newValue
    }
  }

  /// Whether a pairing has started and not yet ended.
  public var isPairing: Bool {
    lock.lock()
    defer { lock.unlock() }
    return pairing != 0
  }

  /// How many times ``startPairing(code:)`` has been called.
  public var startCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return pairings
  }

  /// How many pairings ``cancel()`` has cancelled.
  public var cancelCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return cancels
  }

  /// Starts pairing with the scale that shows `code`; the reports go to the delegate.
  public func startPairing(code: String) {
    lock.lock()
    pairings += 1
    let number = pairings
    pairing = number
    let outcome = _outcome
    let progress = _progress
    lock.unlock()
    var first = true
    script.deliver {
      if first {
        first = false
        for fraction in progress {
          guard let delegate = self.delegateIfStillPairing(number) else { return }
          delegate.pairingSession(self, didProgress: fraction)
        }
      }
      self.report(outcome, of: number)
    }
  }

  /// Cancels the pairing underway, if any: the delegate hears
  /// ``ScalePairingSessionDelegate/pairingSessionDidCancel(_:)`` once, and nothing more
  /// about that pairing.
  public func cancel() {
    lock.lock()
    guard pairing != 0 else {
      lock.unlock()
      return
    }
    lastCancelled = pairing
    pairing = 0
    cancels += 1
    lock.unlock()
    CallbackScript(timing: script.timing).deliver {
      self.delegate?.pairingSessionDidCancel(self)
    }
  }

  /// The delegate to tell about pairing `number`: none when that pairing was cancelled or
  /// a newer one has started. (A repeat of an outcome comes after its pairing ended, and is
  /// delivered all the same.)
  private func delegateIfStillPairing(_ number: Int) -> ScalePairingSessionDelegate? {
    lock.lock()
    defer { lock.unlock() }
    guard number == pairings, number != lastCancelled else { return nil }
    return storedDelegate
  }

  private func report(_ outcome: Outcome, of number: Int) {
    switch outcome {
    case .noAnswer:
      return
    case .pairs(let scale):
      ended(number)?.pairingSession(self, didPair: scale)
    case .fails(let error):
      ended(number)?.pairingSession(self, didFailWithError: error)
    case .cancelledOnTheScale:
      ended(number)?.pairingSessionDidCancel(self)
    case .pairsThenFails(let scale, let error):
      ended(number)?.pairingSession(self, didPair: scale)
      delegateIfStillPairing(number)?.pairingSession(self, didFailWithError: error)
    }
  }

  /// Marks pairing `number` as ended, and returns the delegate to tell about it.
  private func ended(_ number: Int) -> ScalePairingSessionDelegate? {
    lock.lock()
    if pairing == number { pairing = 0 }
    lock.unlock()
    return delegateIfStillPairing(number)
  }
}
