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
  // TODO: Implement this with a continuation that a delegate of your own resumes (leave
  // `PairingScreenController` as it is: the settings screen still uses it). The session
  // reports on any thread, sometimes before `startPairing(code:)` returns, sometimes more
  // than once, sometimes two outcomes at the same moment on two threads (the app's
  // `cancel()` just as the scale answers), and it holds its delegate weakly. Say in
  // comments why each part of your answer is safe.
  throw Unfinished()
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
