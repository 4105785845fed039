import Foundation
import LegacyKit

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
  try await withCheckedThrowingContinuation { continuation in
    // The request keeps itself alive (the session holds it only weakly) until it has
    // answered: see `keepAlive`.
    PairingRequest(session: session, progress: progress, continuation: continuation)
      .start(code: code)
  }
}

/// One pairing, as a delegate that owns itself until the first outcome, guarded by an
/// NSLock instead of a Mutex.
private final class PairingRequest: ScalePairingSessionDelegate, @unchecked Sendable {
  // @unchecked: `continuation` and `keepAlive` are only touched under `lock`.
  private let lock = NSLock()
  private let session: ScalePairingSession
  private let progress: @Sendable (Double) -> Void
  private var continuation: CheckedContinuation<PairedScale, any Error>?
  /// A deliberate retain cycle: nothing else holds the request while the scale works.
  private var keepAlive: PairingRequest?

  init(
    session: ScalePairingSession, progress: @escaping @Sendable (Double) -> Void,
    continuation: CheckedContinuation<PairedScale, any Error>
  ) {
    self.session = session
    self.progress = progress
    self.continuation = continuation
  }

  func start(code: String) {
    lock.withLock { keepAlive = self }
    session.delegate = self
    session.startPairing(code: code)
  }

  func pairingSession(_ session: ScalePairingSession, didProgress fraction: Double) {
    if lock.withLock({ continuation != nil }) { progress(fraction) }
  }

  func pairingSession(_ session: ScalePairingSession, didPair scale: PairedScale) {
    finish(.success(scale))
  }

  func pairingSession(_ session: ScalePairingSession, didFailWithError error: any Error) {
    finish(.failure(error))
  }

  func pairingSessionDidCancel(_ session: ScalePairingSession) {
    finish(.failure(PairingCancelled()))
  }

  /// The first outcome takes the continuation and breaks the cycle; later ones find neither.
  private func finish(_ result: Result<PairedScale, any Error>) {
    let taken: CheckedContinuation<PairedScale, any Error>? = lock.withLock {
      defer {
        continuation = nil
        keepAlive = nil
      }
      return continuation
    }
    guard let taken else { return }
    if session.delegate === self { session.delegate = nil }
    taken.resume(with: result)
  }
}
