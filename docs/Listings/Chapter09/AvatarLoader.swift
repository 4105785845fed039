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

// listing: meeting
/// Sends a photo once both halves are in: the photo the user picked and a fresh sign-in
/// token. Each arrives once, from a callback on a thread of its own, in either order, even
/// at the same moment. Whichever arrives second starts the upload. Sendable because a Mutex
/// guards its state.
final class UploadStarter: Sendable {
  private let arrived = Mutex<(photo: Data?, token: String?)>((nil, nil))
  private let upload: @Sendable (Data, String) -> Void

  init(upload: @escaping @Sendable (Data, String) -> Void) { self.upload = upload }

  func photoPicked(_ photo: Data) {
    let token = arrived.withLock {
      $0.photo = photo
      return $0.token  // one step: record my half, and see whether the other is here
    }
    if let token { upload(photo, token) }  // second to arrive: act, after the lock
  }

  func tokenRefreshed(_ token: String) {
    let photo = arrived.withLock {
      $0.token = token
      return $0.photo
    }
    if let photo { upload(photo, token) }
  }
}
// listing: end
