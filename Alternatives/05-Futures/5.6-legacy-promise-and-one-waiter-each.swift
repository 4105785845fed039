import CoroutineKit
import Foundation
import Synchronization

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

/// The same cache for async code: `let avatar = try await avatars.avatar(for: authorID)`.
///
/// The legacy cache's own design, kept: one `CoPromise` per user on its way, in a `Mutex`
/// instead of an `NSLock`. What changes is how a caller waits for that promise: each one
/// with a continuation of its own, which the promise's callback or the caller's
/// cancellation takes out, once.
final class AvatarCache: Sendable {
  private struct State {
    var avatars: [String: Avatar] = [:]
    var loading: [String: CoPromise<Avatar>] = [:]
  }

  private let loader: any AvatarLoading
  private let state = Mutex(State())

  init(loader: any AvatarLoading) {
    self.loader = loader
  }

  func avatar(for userID: String) async throws -> Avatar {
    enum Found {
      case avatar(Avatar)
      case waiting(CoPromise<Avatar>)
      case started(CoPromise<Avatar>)
    }
    let found: Found = state.withLock { state in
      if let avatar = state.avatars[userID] { return .avatar(avatar) }
      if let pending = state.loading[userID] { return .waiting(pending) }
      let promise = CoPromise<Avatar>()
      state.loading[userID] = promise
      return .started(promise)
    }
    switch found {
    case .avatar(let avatar):
      return avatar
    case .waiting(let promise):
      return try await Waiter().wait(for: promise)
    case .started(let promise):
      loader.loadAvatar(for: userID).whenComplete { result in
        self.state.withLock { state in
          state.loading[userID] = nil
          if case .success(let avatar) = result { state.avatars[userID] = avatar }
        }
        promise.complete(with: result)
      }
      return try await Waiter().wait(for: promise)
    }
  }
}

/// One caller's wait for a shared promise, which it never cancels: the promise is everyone's.
private final class Waiter: Sendable {
  private let slot = Mutex<CheckedContinuation<Avatar, any Error>?>(nil)

  func wait(for promise: CoFuture<Avatar>) async throws -> Avatar {
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        // Stored under the lock that onCancel takes, after checking for a cancellation that
        // came first (onCancel then found nothing to resume).
        let cancelled = slot.withLock { slot in
          if Task.isCancelled { return true }
          slot = continuation
          return false
        }
        if cancelled {
          continuation.resume(throwing: CancellationError())
          return
        }
        // At once if the promise has a result; otherwise on the thread that completes it.
        promise.whenComplete { result in self.resume(with: result) }
      }
    } onCancel: {
      resume(with: .failure(CancellationError()))
    }
  }

  /// Resumes the continuation if it is still there: the first of the promise and the
  /// cancellation wins; the other finds nothing.
  private func resume(with result: Result<Avatar, any Error>) {
    let continuation = slot.withLock { slot in
      defer { slot = nil }
      return slot
    }
    continuation?.resume(with: result)
  }
}
