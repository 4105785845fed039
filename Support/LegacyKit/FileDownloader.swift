import Foundation

/// Why ``FileDownloader`` did not deliver a file.
public enum DownloadError: Error, Equatable, Sendable {
  /// The server has no file at that address.
  case notFound
  /// ``DownloadTask/cancel()`` stopped the download first.
  case cancelled
}

/// A download in progress; ``FileDownloader/download(_:completion:)`` returns one.
public final class DownloadTask: @unchecked Sendable {
  enum State {
    case running, finished, cancelled
  }

  private let downloader: FileDownloader
  // Guarded by the downloader's lock.
  var state = State.running
  var handler: ((Result<Data, DownloadError>) -> Void)?

  init(downloader: FileDownloader, handler: @escaping (Result<Data, DownloadError>) -> Void) {
    self.downloader = downloader
    self.handler = handler
  }

  /// Stops the download if it is still running: the handler then receives
  /// `.failure(.cancelled)` instead of the file, when the downloader's `cancelReply`
  /// script says (possibly synchronously, inside this call). Does nothing if the download
  /// has already finished or been cancelled.
  public func cancel() {
    downloader.cancel(self)
  }
}

/// A file downloader in the style of the classic URL-loading APIs: each download calls
/// its completion handler once, with the data or an error, and can be cancelled through
/// the task it returns.
///
/// Scripts decide when the file arrives and when the "cancelled" reply arrives after a
/// cancel. A buggy mode, `deliversAfterCancel`, models a downloader that reports the
/// cancellation and then still delivers the file it was already receiving, so the handler
/// runs twice. Everything that happens is counted, so tests can see whether a download
/// really was cancelled. Thread-safe and reusable.
public final class FileDownloader: @unchecked Sendable {
  private let files: [URL: Data]
  private let delivery: CallbackScript
  private let cancelReply: CallbackScript
  private let deliversAfterCancel: Bool
  private let whileStarting: (@Sendable () -> Void)?
  private let whileHandingOver: (@Sendable () -> Void)?
  private let lock = NSLock()
  private var started = 0
  private var cancelCalls = 0
  private var cancelled = 0
  private var running = 0
  private var lateDeliveries = 0

  /// - Parameters:
  ///   - files: The data the server has at each address; other addresses are `.notFound`.
  ///   - delivery: When the result arrives if nobody cancels. `.never` models a download
  ///     that ends only when it is cancelled. Its `times` must be 0 or 1.
  ///   - cancelReply: When `.failure(.cancelled)` arrives after a cancel. Its `times` must
  ///     be 1.
  ///   - deliversAfterCancel: Whether a cancelled download still delivers its result
  ///     when `delivery` says it would have, after the cancelled reply.
  ///   - whileStarting: Called inside ``download(_:completion:)``, on the caller's thread,
  ///     after the download has started and before the call returns its task: a test can
  ///     cancel the calling Swift task there, so that the cancel lands before the caller
  ///     has had any chance to store the ``DownloadTask``.
  ///   - whileHandingOver: Called on the delivering thread once the download has finished,
  ///     so that a cancel no longer stops it, and before its completion handler runs: a test
  ///     can cancel the calling Swift task there, in the gap every real downloader has
  ///     between "done" and the callback.
  public init(
    files: [URL: Data], delivery: CallbackScript = .later(.milliseconds(300)),
    cancelReply: CallbackScript = .default, deliversAfterCancel: Bool = false,
    whileStarting: (@Sendable () -> Void)? = nil,
    whileHandingOver: (@Sendable () -> Void)? = nil
  ) {
    precondition(delivery.times <= 1, "a download delivers its result at most once")
    precondition(cancelReply.times == 1, "a cancelled download reports it exactly once")
    self.files = files
    self.delivery = delivery
    self.cancelReply = cancelReply
    self.deliversAfterCancel = deliversAfterCancel
    self.whileStarting = whileStarting
    self.whileHandingOver = whileHandingOver
  }

  /// How many downloads have been started.
  public var downloadsStarted: Int { locked { started } }
  /// How many times ``DownloadTask/cancel()`` has been called, useful or not.
  public var cancelRequests: Int { locked { cancelCalls } }
  /// How many downloads a cancel stopped before they finished.
  public var downloadsCancelled: Int { locked { cancelled } }
  /// How many downloads have started and have neither finished nor been cancelled.
  public var downloadsRunning: Int { locked { running } }
  /// How many results were delivered after a cancelled reply (`deliversAfterCancel`).
  public var deliveriesAfterCancel: Int { locked { lateDeliveries } }

  /// Starts downloading `url`. `completion` receives the data, `.notFound`, or
  /// `.cancelled` if the returned task is cancelled first.
  @discardableResult
  public func download(
    _ url: URL, completion: @escaping (Result<Data, DownloadError>) -> Void
  ) -> DownloadTask {
    let result: Result<Data, DownloadError> =
      files[url].map { .success($0) } ?? .failure(.notFound)
    let task = DownloadTask(downloader: self, handler: completion)
    locked {
      started += 1
      running += 1
    }
    let box = UncheckedSendable(task)
    // Only the buggy mode keeps the handler for after a cancel.
    let lateHandler = deliversAfterCancel ? completion : nil
    delivery.deliver { [self] in
      let task = box.value
      var finishedNow = false
      let handler: ((Result<Data, DownloadError>) -> Void)? = locked {
        switch task.state {
        case .running:
          task.state = .finished
          finishedNow = true
          running -= 1
          defer { task.handler = nil }
          return task.handler
        case .cancelled where lateHandler != nil:
          lateDeliveries += 1
          return lateHandler
        case .cancelled, .finished:
          return nil
        }
      }
      if finishedNow { whileHandingOver?() }
      handler?(result)
    }
    whileStarting?()
    return task
  }

  fileprivate func cancel(_ task: DownloadTask) {
    let handler: ((Result<Data, DownloadError>) -> Void)? = locked {
      cancelCalls += 1
      guard task.state == .running else { return nil }
      task.state = .cancelled
      cancelled += 1
      running -= 1
      defer { task.handler = nil }
      return task.handler
    }
    if let handler {
      cancelReply.deliver { handler(.failure(.cancelled)) }
    }
  }

  private func locked<T>(_ body: () throws -> T) rethrows -> T {
    lock.lock()
    defer { lock.unlock() }
    return try body()
  }
}
