import CoroutineKit
import Dispatch

/// What a people-search screen shows.
enum SearchStatus: Equatable, Sendable {
  /// Nothing typed, or cleared.
  case idle
  /// Waiting for a pause in typing, or for the directory's answer, for this text.
  case searching(String)
  /// The directory's answer: the names that match.
  case results([String])
  /// The directory could not answer.
  case failed
}

// MARK: - The legacy model (the app still ships it; read it, leave it as it is)

/// A search box over the people directory, the coroutine way: every keystroke calls
/// `search(_:)`; after a pause in typing (`debounce`), the model looks the text up and shows
/// the names. The scope is meant to take every search with it when the screen goes away.
///
/// It works on a good day. On a bad one:
/// - `search(_:)` cancels the previous search's *future*, not the coroutine computing it:
///   the old coroutine wakes from its delay, looks up the old text anyway, and may be the
///   last to set `status`, so the screen shows the hits for "a" under "ada";
/// - nothing ever cancels the directory's own future, so a lookup nobody wants runs to the
///   end;
/// - each coroutine holds `self` strongly, so a closed screen lives on until its lookup
///   answers, and the scope's `deinit`, which was to cancel everything, runs too late;
/// - `Coroutine.delay` waits in real time, so every test of the debounce waits too;
/// - the body runs on the coroutine's own thread, not the main thread: an `onChange` that
///   updates the UI is a data race, and in Swift 6 a main-actor `onChange` traps.
final class LegacyPeopleSearchModel {
  /// Called after every change of `status`, on the thread that changed it.
  var onChange: ((SearchStatus) -> Void)?

  private(set) var status = SearchStatus.idle {
    didSet { onChange?(status) }
  }

  private let debounce: Duration
  private let directory: (String) -> CoFuture<[String]>
  private let scope = CoScope()
  /// The search in progress, so the next one can cancel it.
  private var pending: CoFuture<Void>?

  init(
    debounce: Duration = .milliseconds(300),
    directory: @escaping (String) -> CoFuture<[String]>
  ) {
    self.debounce = debounce
    self.directory = directory
  }

  /// Shows `.searching(text)`, waits for a pause in typing, then shows the names for `text`.
  func search(_ text: String) {
    pending?.cancel()
    status = .searching(text)
    pending = DispatchQueue.main.coroutineFuture {
      Coroutine.delay(self.debounce)
      do {
        let names = try self.directory(text).await()
        self.status = .results(names)
      } catch {
        self.status = .failed
      }
    }.added(to: scope)
  }

  /// Stops the search in progress and empties the screen.
  func clear() {
    pending?.cancel()
    pending = nil
    status = .idle
  }
}

// MARK: - The model you write

/// The same screen model, on structured concurrency.
@MainActor
final class PeopleSearchModel {
  /// What the screen shows.
  private(set) var status = SearchStatus.idle

  private let debounce: Duration
  private let clock: any Clock<Duration>
  private let directory: @Sendable (String) -> CoFuture<[String]>

  /// A model that waits `debounce` on `clock` after the last keystroke before it asks
  /// `directory` (which answers later, on a thread of its own).
  init(
    debounce: Duration = .milliseconds(300),
    clock: any Clock<Duration> = ContinuousClock(),
    directory: @escaping @Sendable (String) -> CoFuture<[String]>
  ) {
    self.debounce = debounce
    self.clock = clock
    self.directory = directory
  }

  /// The search in progress, so the next search, `clear()` and `deinit` can cancel it.
  private var current: Task<Void, Never>?

  // Isolated to the main actor (Swift 6.2), so it may touch any property; the model's last
  // reference is let go on the main actor anyway, so it runs at once.
  isolated deinit {
    current?.cancel()
  }

  /// Shows `.searching(text)` at once; after `debounce`, shows the names for `text`, or
  /// `.failed`. Returns the task doing the search, so callers can wait for it.
  @discardableResult
  func search(_ text: String) -> Task<Void, Never> {
    current?.cancel()
    status = .searching(text)
    current = Task { [weak self, debounce, clock, directory] in
      do {
        try await clock.sleep(for: debounce)
        let names = try await directory(text).asyncValue
        try Task.checkCancellation()
        self?.status = .results(names)
      } catch is CancellationError {
        // Cancelled (in the sleep, by the future's bridge, or just after): the screen now
        // belongs to whoever cancelled this search.
      } catch {
        self?.status = .failed
      }
    }
    return current!
  }

  /// Cancels the search in progress and shows `.idle`.
  func clear() {
    current?.cancel()
    current = nil
    status = .idle
  }
}

extension CoFuture where Value: Sendable {
  /// The future's value, suspending until it has one; cancelling the waiting task cancels
  /// the future and throws `CancellationError`.
  fileprivate var asyncValue: Value {
    get async throws {
      do {
        return try await withTaskCancellationHandler {
          try await withCheckedThrowingContinuation { continuation in
            whenComplete { continuation.resume(with: $0) }
          }
        } onCancel: {
          cancel()
        }
      } catch CoFutureError.cancelled {
        throw CancellationError()
      }
    }
  }
}
