import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// listing: legacy
/// How an app talked to its server before async/await.
final class AvatarLoader: Sendable {
  let session = URLSession(configuration: .default)

  /// Calls `completion` once, on a session thread; `cancel()` on the task makes it fail
  /// with URLError(.cancelled). A 404 is not an error here: check the status yourself.
  func load(
    _ url: URL, completion: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
  ) -> URLSessionDataTask {
    let task = session.dataTask(with: url, completionHandler: completion)
    task.resume()
    return task
  }
}
// listing: end

// listing: gate
/// A cancel that may come before, during or after the work starts: whichever of `start`
/// and `cancel` comes second stops the work. Sendable because a Mutex guards its state.
final class CancelGate<Work: Sendable>: Sendable {
  private let state = Mutex<(work: Work?, cancelled: Bool)>((nil, false))
  private let stop: @Sendable (Work) -> Void

  init(stop: @escaping @Sendable (Work) -> Void) { self.stop = stop }

  var isCancelled: Bool { state.withLock { $0.cancelled } }

  func start(_ work: Work) {
    let cancelled = state.withLock {
      $0.work = work
      return $0.cancelled
    }
    if cancelled { stop(work) }
  }

  func cancel() {
    let work = state.withLock {
      $0.cancelled = true
      return $0.work
    }
    if let work { stop(work) }
  }
}
// listing: end
