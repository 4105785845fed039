import CoroutineKit
import Foundation

/// A user's picture, as the app shows it.
struct Avatar: Equatable, Sendable {
  var userID: String
  var imageData: [UInt8]
}

/// The network side of avatars, not migrated yet: each call starts a download at once and
/// returns its future. The future completes on a background thread, or before the call
/// returns when the image was already on disk; it fails when the download does.
protocol AvatarLoading: Sendable {
  func loadAvatar(for userID: String) -> CoFuture<Avatar>
}

// MARK: - The legacy cache (the app still ships it; read it, leave it as it is)

/// The avatar cache the app's screens share, the coroutine way.
///
/// A feed with forty posts by the same author asks for one avatar forty times at once, so
/// the cache keeps one promise per user whose avatar is on its way and hands that same
/// promise to every caller: one download, forty waiters.
///
///     DispatchQueue.global().startCoroutine {
///       let avatar = try avatars.avatar(for: post.authorID).await()
///       cell.show(avatar)
///     }
///
/// A cell that scrolls away before its avatar arrives calls `cancel()` on its future. That
/// future is the shared promise: every other cell waiting for the same author gets
/// `CoFutureError.cancelled` too, and so does every caller until the download ends. The
/// team's workaround was "never cancel an avatar", so scrolled-away cells went on waiting.
final class LegacyAvatarCache {
  private let loader: AvatarLoading
  private let lock = NSLock()
  /// The avatars downloaded so far, by user.
  private var avatars: [String: Avatar] = [:]
  /// One promise per user whose avatar is on its way, shared by every caller.
  private var loading: [String: CoPromise<Avatar>] = [:]

  init(loader: AvatarLoading) {
    self.loader = loader
  }

  func avatar(for userID: String) -> CoFuture<Avatar> {
    lock.lock()
    if let avatar = avatars[userID] {
      lock.unlock()
      return CoFuture(value: avatar)
    }
    if let pending = loading[userID] {
      lock.unlock()
      return pending
    }
    let promise = CoPromise<Avatar>()
    loading[userID] = promise
    lock.unlock()

    // Outside the lock: the loader may complete its future before it returns, and then
    // this callback runs at once, on this thread, and takes the lock.
    loader.loadAvatar(for: userID).whenComplete { result in
      self.lock.lock()
      self.loading[userID] = nil
      // A failed download is not kept: the next caller tries again.
      if case .success(let avatar) = result { self.avatars[userID] = avatar }
      self.lock.unlock()
      promise.complete(with: result)
    }
    return promise
  }
}

// MARK: - The cache you write

/// The same cache for async code: `let avatar = try await avatars.avatar(for: authorID)`.
final class AvatarCache: Sendable {
  private let loader: any AvatarLoading

  init(loader: any AvatarLoading) {
    self.loader = loader
  }

  /// The avatar of `userID`: the one downloaded before, or the download on its way, or a
  /// new download.
  func avatar(for userID: String) async throws -> Avatar {
    // TODO: Give async callers the legacy cache's behaviour, without blocking a thread:
    // concurrent callers for one user share one download, a downloaded avatar is kept, and
    // a failed download is not (everyone waiting for it gets its error; the next call
    // downloads again). Fix the legacy bug on the way: a caller whose task is cancelled
    // stops waiting at once, with CancellationError, and nobody else notices. Its download
    // goes on for the others and is kept when it arrives, even if every caller has gone.
    // Change the class as you see fit (an actor is fine); keep init(loader:) and this
    // method's signature.
    throw Unfinished()
  }
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
