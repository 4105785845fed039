import Foundation

/// A device battery in the UIKit style: when its charge changes, it posts
/// ``levelDidChangeNotification`` to its ``notificationCenter``, with itself as the object
/// and nothing in `userInfo`. Observers read the new ``level`` from the battery.
///
/// ``simulateChanges(to:)`` plays a sequence of changes: for each, the battery sets ``level``
/// and then posts, all on one thread and in order. The script decides where that happens
/// (inside the call for a synchronous script, otherwise on the battery's own serial queue)
/// and how many times each notification is posted (0: the level changes without a word).
///
/// Every read of ``level`` is counted in ``levelReadCount``. An observer block reads it, so
/// the count shows whether a posted change still reached an observer. A read made outside the
/// post, on another thread or later, is counted in ``levelReadsOutsidePostsCount`` as well.
/// Thread-safe.
public final class Battery: @unchecked Sendable {
  /// Posted after ``level`` changed. The object is the battery; there is no `userInfo`.
  public static let levelDidChangeNotification = Notification.Name(
    "LegacyKit.Battery.levelDidChange")

  /// Where the battery posts its notifications.
  public let notificationCenter: NotificationCenter

  private let lock = NSLock()
  private let queue = DispatchQueue(label: "LegacyKit.Battery")
  private let script: CallbackScript
  private var charge: Int
  private var reads = 0
  private var posts = 0
  private var readsOutsidePosts = 0
  private var readsBeforePosts = 0
  /// The threads that are posting a change of ``simulateChanges(to:)`` right now, for any
  /// battery: an observer that hears every battery reads this one's level in another's post.
  private static let postingLock = NSLock()
  private static var postingThreads: [pthread_t] = []

  /// Whether this thread is inside a post of ``simulateChanges(to:)`` right now, running the
  /// observers of a change.
  public static var isPostingOnThisThread: Bool { isPosting }

  private static var isPosting: Bool {
    postingLock.lock()
    defer { postingLock.unlock() }
    let me = pthread_self()
    return postingThreads.contains(where: { pthread_equal($0, me) != 0 })
  }

  private static func posting(_ post: () -> Void) {
    postingLock.lock()
    postingThreads.append(pthread_self())
    postingLock.unlock()
    post()
    postingLock.lock()
    let me = pthread_self()
    if let index = postingThreads.firstIndex(where: { pthread_equal($0, me) != 0 }) {
      postingThreads.remove(at: index)
    }
    postingLock.unlock()
  }

  /// - Parameters:
  ///   - level: The charge to begin with, in percent.
  ///   - notificationCenter: Where to post. Tests pass a fresh `NotificationCenter()`, so
  ///     that nothing else observes it.
  ///   - script: Where changes happen, and how many times each is posted.
  public init(
    level: Int = 100, notificationCenter: NotificationCenter = .default,
    script: CallbackScript = .default
  ) {
    self.charge = level
    self.notificationCenter = notificationCenter
    self.script = script
  }

  /// The charge, in percent. Each read is counted in ``levelReadCount``, and a read that is
  /// not made inside a post of ``simulateChanges(to:)``, on the posting thread, is counted in
  /// ``levelReadsOutsidePostsCount`` too.
  public var level: Int {
    lock.lock()
    defer { lock.unlock() }
    reads += 1
    if !Battery.isPosting { readsOutsidePosts += 1 }
    if posts == 0, !Battery.isPosting { readsBeforePosts += 1 }
    return charge
  }

  /// How many reads of ``level`` were made before anything was posted: the charge as it
  /// was, not news of a change.
  public var levelReadsBeforeAnyPostCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return readsBeforePosts
  }

  /// How many reads of ``level`` were made anywhere but inside a post of
  /// ``simulateChanges(to:)``, on the thread that posted: by an observer block that the center
  /// ran later on a queue of its own, for example, when the level may have changed again.
  public var levelReadsOutsidePostsCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return readsOutsidePosts
  }

  /// How many times ``level`` has been read.
  public var levelReadCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return reads
  }

  /// How many times ``levelDidChangeNotification`` has been posted.
  public var postCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return posts
  }

  /// Changes the charge to each of `levels` in turn, posting after each change as the
  /// script says.
  public func simulateChanges(to levels: [Int]) {
    let times = script.times
    let work = {
      for level in levels {
        self.lock.lock()
        self.charge = level
        self.lock.unlock()
        for _ in 0..<times {
          self.lock.lock()
          self.posts += 1
          self.lock.unlock()
          Battery.posting {
            self.notificationCenter.post(name: Battery.levelDidChangeNotification, object: self)
          }
        }
      }
    }
    // Legacy code hands non-Sendable closures to other threads; that is the point here.
    let box = UncheckedSendable(work)
    switch script.timing {
    case .synchronously:
      work()
    case .onBackgroundQueue:
      queue.async { box.value() }
    case .after(let delay):
      queue.asyncAfter(deadline: .now() + delay.timeInterval) { box.value() }
    case .scheduled(let scheduler):
      scheduler.schedule { box.value() }
    }
  }
}
