import LegacyKit
import Synchronization

/// Thrown when a pairing is cancelled: on the scale's own button, or by the app calling
/// `cancel()` on the session.
struct PairingCancelled: Error, Equatable {}

// The app's old pairing screen, from before async/await. Its bug reports: a pairing the user
// cancels leaves the spinner turning forever, and the "paired!" sound sometimes plays twice.
final class PairingScreenController: ScalePairingSessionDelegate {
  private let session: ScalePairingSession
  private var showProgress: ((Double) -> Void)?
  private var completion: ((Result<PairedScale, Error>) -> Void)?

  init(session: ScalePairingSession) {
    self.session = session
  }

  func pair(
    code: String,
    progress: @escaping (Double) -> Void,
    completion: @escaping (Result<PairedScale, Error>) -> Void
  ) {
    showProgress = progress
    self.completion = completion
    session.delegate = self
    session.startPairing(code: code)
  }

  func cancelTapped() {
    session.cancel()
  }

  func pairingSession(_ session: ScalePairingSession, didProgress fraction: Double) {
    showProgress?(fraction)
  }

  func pairingSession(_ session: ScalePairingSession, didPair scale: PairedScale) {
    completion?(.success(scale))
  }

  func pairingSession(_ session: ScalePairingSession, didFailWithError error: Error) {
    completion?(.failure(error))
  }
}

/// Pairs with the scale that shows `code` and returns it.
///
/// - Each progress value the session reports is passed to `progress`, in order, before this
///   returns.
/// - A pairing that succeeds returns the scale; one that fails throws the session's error;
///   one that is cancelled, on the scale or with `session.cancel()`, throws
///   ``PairingCancelled``. Whatever the session reports after that first outcome changes
///   nothing.
/// - The same session can pair again once a pairing has ended.
func pairScale(
  _ session: ScalePairingSession,
  code: String,
  progress: @escaping @Sendable (Double) -> Void
) async throws -> PairedScale {
  // The session holds its delegate weakly, so something must hold the request while the
  // caller waits: calling `run()` on it does (`request` lives until `run()` returns).
  let request = PairingRequest(session: session, progress: progress)
  return try await request.run(code: code)
}

/// One pairing: the delegate that passes progress on and resumes the caller with the first
/// outcome the session reports.
private final class PairingRequest: ScalePairingSessionDelegate, Sendable {
  private let session: ScalePairingSession
  private let progress: @Sendable (Double) -> Void
  /// The waiting caller: `nil` before `run(code:)` and once it has been answered. The
  /// session reports on any thread, so every access goes through the lock.
  private let waiting = Mutex<CheckedContinuation<PairedScale, any Error>?>(nil)

  init(session: ScalePairingSession, progress: @escaping @Sendable (Double) -> Void) {
    self.session = session
    self.progress = progress
  }

  func run(code: String) async throws -> PairedScale {
    try await withCheckedThrowingContinuation { continuation in
      // Store first, then start: with a synchronous script the whole pairing, progress and
      // outcome, is reported inside `startPairing(code:)`.
      waiting.withLock { $0 = continuation }
      session.delegate = self
      // Not under the lock: the reports may come right here, and each one takes the lock.
      session.startPairing(code: code)
    }
  }

  func pairingSession(_ session: ScalePairingSession, didProgress fraction: Double) {
    // Progress comes before the outcome, so the caller is still waiting; once it has been
    // answered, a late report is not passed on.
    guard waiting.withLock({ $0 != nil }) else { return }
    progress(fraction)
  }

  func pairingSession(_ session: ScalePairingSession, didPair scale: PairedScale) {
    finish(.success(scale))
  }

  func pairingSession(_ session: ScalePairingSession, didFailWithError error: any Error) {
    finish(.failure(error))
  }

  // Optional in the protocol, so the compiler would not have asked for it; without it a
  // cancelled pairing would leave the caller waiting forever.
  func pairingSessionDidCancel(_ session: ScalePairingSession) {
    finish(.failure(PairingCancelled()))
  }

  /// Answers the caller once. Taking the continuation out under the lock is what makes the
  /// firmware's repeats (and a failure reported after the pairing) harmless: they find it
  /// gone. Resuming happens outside the lock, so the resumed caller never waits on it.
  private func finish(_ result: Result<PairedScale, any Error>) {
    guard let continuation = waiting.withLock({ $0.take() }) else { return }
    // Stop listening, so the next pairing on this session gets a delegate of its own and
    // this one is released.
    if session.delegate === self { session.delegate = nil }
    continuation.resume(with: result)
  }
}
