import Foundation
import Synchronization
import WorkbookTesting

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a legacy data task's completion handler gets.
typealias DataTaskCompletion = @Sendable (Data?, URLResponse?, (any Error)?) -> Void

/// A session whose legacy entry point, `dataTask(with:completionHandler:)`, a test scripts:
/// to run code of its own at a chosen step of the learner's call (right after the data task
/// is created, or right before its completion gets the outcome), or to hand out data tasks
/// that never touch the network, for races of thousands of rounds. Everything else (the
/// async `data(from:)` included) is an ordinary ephemeral session.
///
/// The hooks make "the task is cancelled at this very step" happen on every run instead of
/// once in a thousand, without sleeping: they run inside the learner's own call.
final class ScriptedSession: URLSession, @unchecked Sendable {
  // @unchecked: restated from URLSession; the properties below are `let`s of Sendable types.

  /// Runs once, on the thread that called `dataTask(with:completionHandler:)` (inside the
  /// learner's call), after the data task exists and before it is returned (offline too).
  let afterCreating = Locked<(@Sendable () -> Void)?>(nil)
  /// Runs once, on the session's thread, when the data task has its outcome and before the
  /// completion handler gets it.
  let beforeCompleting = Locked<(@Sendable () -> Void)?>(nil)
  /// When set, data tasks are ``OfflineDataTask``s, and each one runs this from its
  /// `resume()`, on the thread that resumes it.
  let offline = Locked<(@Sendable (OfflineDataTask) -> Void)?>(nil)
  /// How many data tasks the legacy entry point has handed out.
  let created = Locked(0)

  /// An ephemeral session like ``makeSession(delegate:)``'s.
  convenience init() {
    let configuration = testConfiguration()
    self.init(configuration: configuration, delegate: nil, delegateQueue: nil)
  }

  override func dataTask(
    with url: URL, completionHandler: @escaping DataTaskCompletion
  ) -> URLSessionDataTask {
    created.withLock { $0 += 1 }
    if let onResume = offline.value {
      let task = OfflineDataTask(completionHandler, onResume: onResume)
      afterCreating.withLock { $0.take() }?()
      return task
    }
    let beforeCompleting = beforeCompleting.withLock { $0.take() }
    let task = super.dataTask(with: url) { data, response, error in
      beforeCompleting?()
      completionHandler(data, response, error)
    }
    afterCreating.withLock { $0.take() }?()
    return task
  }
}

/// A data task that never touches the network: `resume()` runs the session's hook,
/// `cancel()` completes it, once, with `URLError(.cancelled)` on another thread, as a real
/// data task does, and ``complete(with:status:first:)`` completes it as a server's answer
/// would. It remembers which thread cancelled it first.
///
/// Unlike a real one, it can be cancelled just after `resume()`, or just as it completes,
/// without ever tripping FoundationNetworking (which, cancelled at those moments, now and
/// then stops the process: "Trying to access a behaviour for a task that in not in the
/// registry").
final class OfflineDataTask: URLSessionDataTask, @unchecked Sendable {
  // @unchecked: restated from URLSessionTask; the properties below are `let`s of Sendable
  // types.

  private let completion: Mutex<DataTaskCompletion?>
  private let onResume: @Sendable (OfflineDataTask) -> Void
  /// The completion a held `cancel()` kept, until ``releaseCancel()``.
  private let heldCancel = Mutex<DataTaskCompletion?>(nil)

  /// While true, `cancel()` keeps the completion instead of running it, until
  /// ``releaseCancel()``: the request is cancelled and has not reported back yet, as a real
  /// one may not for a while, and a test sees what the caller does meanwhile.
  let holdsCancel = Locked(false)
  private let threads = Mutex<(resumer: pthread_t?, cancelledByResumer: Bool?)>((nil, nil))

  init(
    _ completion: @escaping DataTaskCompletion,
    onResume: @escaping @Sendable (OfflineDataTask) -> Void
  ) {
    self.completion = Mutex(completion)
    self.onResume = onResume
    super.init()
  }

  /// Whether the task was completed (or cancelled) already.
  var isCompleted: Bool { completion.withLock { $0 == nil } }

  /// Whether the first `cancel()` came on the thread that called `resume()` (the learner's
  /// own call saw the cancel), on another one (a cancellation handler did), or never.
  var cancelledByResumer: Bool? { threads.withLock { $0.cancelledByResumer } }

  override func resume() {
    threads.withLock { $0.resumer = pthread_self() }
    onResume(self)
  }

  /// Completes the task, now and on this thread, with `body` and a response of `status`, as
  /// though the server had answered; nothing if it was already cancelled or completed.
  /// `first` runs once the answer is in (a `cancel()` then changes nothing) and before the
  /// completion handler gets it.
  func complete(with body: String, status: Int = 200, first: (() -> Void)? = nil) {
    guard let completion = completion.withLock({ $0.take() }) else { return }
    first?()
    let url = URL(string: "http://127.0.0.1/offline")!
    let response = HTTPURLResponse(
      url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: nil)
    completion(Data(body.utf8), response, nil)
  }

  override func cancel() {
    let me = pthread_self()
    threads.withLock { threads in
      guard threads.cancelledByResumer == nil else { return }
      threads.cancelledByResumer = threads.resumer.map { pthread_equal($0, me) != 0 } ?? false
    }
    guard let completion = completion.withLock({ $0.take() }) else { return }
    if holdsCancel.value {
      heldCancel.withLock { $0 = completion }
      return
    }
    DispatchQueue.global().async { completion(nil, nil, URLError(.cancelled)) }
  }

  /// Runs the completion a held `cancel()` kept, with `URLError(.cancelled)`, on another
  /// thread; nothing if no cancel was held.
  func releaseCancel() {
    guard let completion = heldCancel.withLock({ $0.take() }) else { return }
    DispatchQueue.global().async { completion(nil, nil, URLError(.cancelled)) }
  }
}
