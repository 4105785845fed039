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
  /// What the cache knows about one user.
  private enum Entry {
    /// Downloaded: every later caller gets it at once.
    case loaded(Avatar)
    /// On its way: every caller waits for this one download.
    case loading(SharedLoad)
  }

  private let loader: any AvatarLoading
  private let entries = Mutex<[String: Entry]>([:])

  init(loader: any AvatarLoading) {
    self.loader = loader
  }

  /// The avatar of `userID`: the one downloaded before, or the download on its way, or a
  /// new download.
  func avatar(for userID: String) async throws -> Avatar {
    // Look and claim in one step: of two callers arriving at once, exactly one finds no
    // entry and starts the download; the other finds the first one's load and joins it.
    // (An actor that checks, awaits the download, then stores the avatar loses this: every
    // caller that arrives during the await checks too, and starts a download of its own.)
    let (entry, isNew): (Entry, Bool) = entries.withLock { entries in
      if let entry = entries[userID] { return (entry, false) }
      let entry = Entry.loading(SharedLoad())
      entries[userID] = entry
      return (entry, true)
    }
    switch entry {
    case .loaded(let avatar):
      return avatar
    case .loading(let load):
      if isNew { startDownload(of: userID, into: load) }
      return try await load.value
    }
  }

  /// Starts the download, outside the lock: the loader may complete its future before it
  /// returns, and then the callback below runs at once, on this thread, and takes the lock.
  ///
  /// Nobody ever cancels the legacy future: the download belongs to the cache, not to the
  /// caller that happened to start it, so it goes on however many callers give up, and its
  /// avatar is kept for the next one.
  private func startDownload(of userID: String, into load: SharedLoad) {
    loader.loadAvatar(for: userID).whenComplete { result in
      // The entry first, the waiters second: a waiter that resumes and asks again at once
      // finds the avatar, or no entry after a failure (and downloads again), never the
      // finished load.
      self.entries.withLock { entries in
        switch result {
        case .success(let avatar): entries[userID] = .loaded(avatar)
        case .failure: entries[userID] = nil  // a failure is not kept
        }
      }
      load.complete(with: result)
    }
  }
}

/// One download's result, awaited by every caller who wants it: the promise of exercise
/// 5.2, kept private to the cache (the chapter's `Promise` is your own answer to 5.2, and
/// may not be finished yet).
///
/// What the cache needs from it is that each awaiter can leave alone: a cancelled awaiter
/// takes its own continuation out and throws `CancellationError`; the result, when it
/// comes, resumes everyone still waiting. The load itself is not touched.
private final class SharedLoad: Sendable {
  private struct State {
    var result: Result<Avatar, any Error>?
    var waiting: [Int: CheckedContinuation<Avatar, any Error>] = [:]
    var nextID = 0
  }

  private let state = Mutex(State())

  /// Sets the result and resumes everyone waiting, outside the lock. The legacy future
  /// completes once, so this runs once; a second call would change nothing.
  func complete(with result: Result<Avatar, any Error>) {
    let awaiters: [CheckedContinuation<Avatar, any Error>] = state.withLock { state in
      guard state.result == nil else { return [] }
      state.result = result
      defer { state.waiting.removeAll() }
      return Array(state.waiting.values)
    }
    for awaiter in awaiters { awaiter.resume(with: result) }
  }

  /// The download's avatar; its error; or `CancellationError` as soon as the awaiting task
  /// is cancelled, whatever the download does.
  var value: Avatar {
    get async throws {
      let id = state.withLock { state in
        state.nextID += 1
        return state.nextID
      }
      return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
          let outcome: Result<Avatar, any Error>? = state.withLock { state in
            if let result = state.result { return result }
            // Under the lock that onCancel takes: either the task is cancelled already and
            // this awaiter stops here, or onCancel comes later and finds the continuation.
            if Task.isCancelled { return .failure(CancellationError()) }
            state.waiting[id] = continuation
            return nil
          }
          if let outcome { continuation.resume(with: outcome) }
        }
      } onCancel: {
        // Whoever takes the continuation out resumes it: this handler or complete(with:),
        // never both. Only this awaiter leaves; the others and the download go on.
        let awaiter = state.withLock { $0.waiting.removeValue(forKey: id) }
        awaiter?.resume(throwing: CancellationError())
      }
    }
  }
}
