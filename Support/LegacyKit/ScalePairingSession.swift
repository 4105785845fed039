import Foundation
import Synchronization

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
/// - a switched-off scale never answers: only ``cancel()`` ends that pairing;
/// - the scale may pair at the very moment the app cancels, see
///   ``Outcome/pairsAsTheAppCancels(_:)``: both reports come at once, on two threads.
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
    /// Paired at the very moment the app called ``ScalePairingSession/cancel()``: the
    /// delegate hears `didPair` and `pairingSessionDidCancel` at once, on two threads.
    ///
    /// So that the two reports really overlap, the session holds each of those threads in
    /// the ``ScalePairingSession/delegate`` accessors (after reading the delegate, before
    /// changing it), as its internal lock would, held by the other report, until the other
    /// report has reached them too or has returned, for at most half a second.
    case pairsAsTheAppCancels(PairedScale)

    public var description: String {
      switch self {
      case .pairs(let scale): return "pairs with \(scale)"
      case .fails(let error): return "fails with \(error)"
      case .cancelledOnTheScale: return "cancelled on the scale"
      case .pairsThenFails(let scale, let error):
        return "pairs with \(scale), then fails with \(error)"
      case .noAnswer: return "never answers"
      case .pairsAsTheAppCancels(let scale):
        return "pairs with \(scale) as the app cancels, both reported at once"
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
  /// The threads reporting at once (``Outcome/pairsAsTheAppCancels(_:)``), and how far
  /// each has got; guarded by `raceCondition`, not by `lock`, since they wait on it.
  private let raceCondition = NSCondition()
  private var racers: [ObjectIdentifier: RaceStep] = [:]
  /// How many of those waits ran out, and whether one did in the reports under way (then
  /// the others do not wait: one stall says enough); guarded by `raceCondition`.
  private var stalls = 0
  private var stalledNow = false

  private enum RaceStep {
    case reporting, atTheDelegate, done
  }

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
      let delegate = storedDelegate
      lock.unlock()
      // Read first, held second: the other report reads the same value before either of
      // them can change it.
      waitForTheOtherReport()
      return delegate
    }
    set {
      waitForTheOtherReport()
      lock.lock()
      defer { lock.unlock() }
      storedDelegate = newValue
    }
  }

  private var _progressHook: (@Sendable (Double) -> Void)?

  /// Called on the reporting thread for each progress report, once the session has picked
  /// the delegate to tell and before it tells it: a test can hold a report there, as a busy
  /// thread would, while something else happens (the app cancels, say).
  public var onProgressReport: (@Sendable (Double) -> Void)? {
    get {
      lock.lock()
      defer { lock.unlock() }
      return _progressHook
    }
    set {
      lock.lock()
      defer { lock.unlock() }
      _progressHook = newValue
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
          self.onProgressReport?(fraction)
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
    case .pairsAsTheAppCancels(let scale):
      guard let delegate = ended(number) else { return }
      lock.lock()
      cancels += 1
      lock.unlock()
      reportAtOnce(
        { delegate.pairingSession(self, didPair: scale) },
        { delegate.pairingSessionDidCancel(self) })
    }
  }

  /// Makes both reports at once, each on a thread of its own, and returns when both have.
  private func reportAtOnce(_ first: @escaping () -> Void, _ second: @escaping () -> Void) {
    // Each thread registers as reporting before either reports, so that the delegate
    // accessors know to hold it.
    Self.reporters.report(
      { [self] in
        raceCondition.lock()
        racers[ObjectIdentifier(Thread.current)] = .reporting
        raceCondition.unlock()
      },
      [
        { [self] in
          first()
          step(to: .done)
        },
        { [self] in
          second()
          step(to: .done)
        },
      ])
    raceCondition.lock()
    racers = [:]
    stalledNow = false
    raceCondition.unlock()
  }

  /// The two threads every session reports at once on: kept for the life of the process,
  /// so that a test can race thousands of pairings without starting threads.
  private static let reporters = ReportingPair()

  /// Records how far the calling racer has got, and wakes the others.
  private func step(to step: RaceStep) {
    raceCondition.lock()
    racers[ObjectIdentifier(Thread.current)] = step
    raceCondition.broadcast()
    raceCondition.unlock()
  }

  /// On a thread reporting at once with another: waits until every other such thread has
  /// reached the delegate accessors too, or has returned from its report (half a second at
  /// most). Anywhere else: returns at once.
  private func waitForTheOtherReport() {
    let me = ObjectIdentifier(Thread.current)
    raceCondition.lock()
    defer { raceCondition.unlock() }
    guard racers[me] != nil, !stalledNow else { return }
    racers[me] = .atTheDelegate
    raceCondition.broadcast()
    let deadline = Date(timeIntervalSinceNow: 0.5)
    while racers.contains(where: { $0.key != me && $0.value == .reporting }) {
      if !raceCondition.wait(until: deadline) {
        stalls += 1
        stalledNow = true
        return
      }
    }
  }

  /// How many times a thread reporting at once with another
  /// (``Outcome/pairsAsTheAppCancels(_:)``) waited in the ``delegate`` accessors for the
  /// other report and gave up after half a second: the other report never got there, nor
  /// returned (the pair's later waits are then skipped). Once can be a thread the machine
  /// did not run for that long; again and again, the other report is waiting for something
  /// this one holds (a lock of the delegate's).
  public var stalledReportWaits: Int {
    raceCondition.lock()
    defer { raceCondition.unlock() }
    return stalls
  }

  /// Marks pairing `number` as ended, and returns the delegate to tell about it.
  private func ended(_ number: Int) -> ScalePairingSessionDelegate? {
    lock.lock()
    if pairing == number { pairing = 0 }
    lock.unlock()
    return delegateIfStillPairing(number)
  }
}

/// Two threads that make two reports at the same instant: each spins at a start line until
/// the other is there, then waits a random few hundred nanoseconds more, so that which
/// report comes first, and by how much, varies from one pairing to the next.
private final class ReportingPair: @unchecked Sendable {
  // @unchecked: `work`, `round` and `finished` are guarded by `condition`.
  private let condition = NSCondition()
  private var work: [(register: () -> Void, report: () -> Void)] = []
  private var round = 0
  private var finished = 0
  /// How many reporters have reached the start line, over all rounds.
  private let arrived = Atomic(0)
  private let serial = NSLock()

  init() {
    for index in 0..<2 {
      let thread = Thread { [self] in serve(index) }
      thread.name = "ScalePairingSession reporter \(index + 1)"
      thread.start()
    }
  }

  /// On thread `i`: `register`, then, once both have registered, `reports[i]`; returns
  /// when both reports have returned.
  func report(_ register: @escaping () -> Void, _ reports: [() -> Void]) {
    serial.lock()
    defer { serial.unlock() }
    condition.lock()
    work = reports.map { (register, $0) }
    finished = 0
    round += 1
    condition.broadcast()
    while finished < reports.count { condition.wait() }
    condition.unlock()
  }

  private func serve(_ index: Int) {
    var seen = 0
    while true {
      condition.lock()
      while round == seen { condition.wait() }
      seen = round
      let mine = work[index]
      condition.unlock()
      mine.register()
      arrived.add(1, ordering: .sequentiallyConsistent)
      let deadline = Date(timeIntervalSinceNow: 1)
      var spins = 0
      while arrived.load(ordering: .sequentiallyConsistent) < seen * 2 {
        spins += 1
        if spins % 4_096 == 0 && Date() >= deadline { break }
      }
      // Each round an atomic load, so that the compiler keeps the loop.
      for _ in 0..<Int.random(in: 0...600) { _ = arrived.load(ordering: .relaxed) }
      mine.report()
      condition.lock()
      finished += 1
      condition.broadcast()
      condition.unlock()
    }
  }
}
