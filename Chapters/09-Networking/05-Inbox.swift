import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// A whole legacy module: an inbox client as a pre-concurrency app had it. Screens call
// `unreadCount(completion:)` for a badge, and `startWatching(every:)`, which polls the
// count and posts `.inboxUnreadCountDidChange` (userInfo["count"]) to every observer
// whenever it changes, until `stopWatching()`. Those screens stay as they are for now;
// new code wants the async API at the bottom.

extension Notification.Name {
  /// Posted by ``InboxClient`` when the unread count it polls changes; `userInfo["count"]`
  /// is the new count (an `Int`).
  static let inboxUnreadCountDidChange = Notification.Name("InboxUnreadCountDidChange")
}

/// The inbox answered with a status that is not 2xx, or with a body that is not a count.
enum InboxError: Error, Equatable {
  case status(Int)
  case notACount(String)
}

/// The inbox service's client.
final class InboxClient: Sendable {
  let baseURL: URL
  let session: URLSession
  let notificationCenter: NotificationCenter
  /// Which watch is current: `startWatching` and `stopWatching` each move it on.
  private let watching = Mutex(0)
  private let lastCount = Mutex<Int?>(nil)

  init(baseURL: URL, session: URLSession, notificationCenter: NotificationCenter = .default) {
    self.baseURL = baseURL
    self.session = session
    self.notificationCenter = notificationCenter
  }

  // MARK: The legacy API (unchanged; callers still use it)

  /// GET /unread: the number of unread messages, once, on a session thread.
  @discardableResult
  func unreadCount(
    completion: @escaping @Sendable (Result<Int, any Error>) -> Void
  ) -> URLSessionDataTask {
    let task = session.dataTask(with: baseURL.appendingPathComponent("unread")) {
      data, response, error in
      if let error {
        completion(.failure(error))
        return
      }
      let status = (response as? HTTPURLResponse)?.statusCode ?? 0
      guard (200..<300).contains(status) else {
        completion(.failure(InboxError.status(status)))
        return
      }
      let text = String(decoding: data ?? Data(), as: UTF8.self)
      guard let count = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
        completion(.failure(InboxError.notACount(text)))
        return
      }
      completion(.success(count))
    }
    task.resume()
    return task
  }

  /// Polls the count now and every `interval`, posting `.inboxUnreadCountDidChange`
  /// whenever it differs from the last one seen; failed polls are skipped. Until
  /// `stopWatching()`.
  func startWatching(every interval: TimeInterval) {
    let generation = watching.withLock { generation in
      generation += 1
      return generation
    }
    schedulePoll(after: 0, every: interval, generation: generation)
  }

  /// Stops the polling that `startWatching(every:)` started.
  func stopWatching() {
    watching.withLock { $0 += 1 }
  }

  /// One poll of the watch numbered `generation`, unless it was stopped (or restarted)
  /// since; then the next one.
  private func schedulePoll(
    after delay: TimeInterval, every interval: TimeInterval, generation: Int
  ) {
    DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
      guard let self, self.watching.withLock({ $0 == generation }) else { return }
      self.poll()
      self.schedulePoll(after: interval, every: interval, generation: generation)
    }
  }

  private func poll() {
    unreadCount { [weak self] result in
      guard let self, case .success(let count) = result else { return }
      self.publish(count)
    }
  }

  /// Posts the notification if `count` is news.
  private func publish(_ count: Int) {
    let changed = lastCount.withLock { last in
      defer { last = count }
      return last != count
    }
    if changed {
      notificationCenter.post(
        name: .inboxUnreadCountDidChange, object: self, userInfo: ["count": count])
    }
  }

  // MARK: The async API

  /// The number of unread messages. Throws ``InboxError`` or the session's error;
  /// cancelling the task cancels the request and throws `CancellationError`.
  func unreadCount() async throws -> Int {
    // TODO: The count, as the legacy `unreadCount(completion:)` reads it, but async:
    // cancelling the task cancels the request (and throws CancellationError).
    throw Unfinished()
  }

  /// The unread count now and whenever it changes, polled every `interval`, for as long as
  /// somebody listens; the first failed poll ends the stream with its error. Every change
  /// is also posted as `.inboxUnreadCountDidChange`, so the screens that still observe the
  /// notification keep working.
  func unreadCounts(every interval: Duration) -> AsyncThrowingStream<Int, any Error> {
    // TODO: Poll now and every `interval` for as long as somebody listens, yielding the
    // count when it changes (and posting the notification, as `startWatching` does); the
    // first failed poll ends the stream with its error.
    AsyncThrowingStream { $0.finish(throwing: Unfinished()) }
  }
}

private struct Unfinished: Error {}
