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

  // TODO: Give this model the legacy model's behaviour without its bugs. `search(_:)` shows
  // `.searching(text)` at once, waits `debounce` on `clock`, looks `text` up, and shows the
  // names (or `.failed`); it returns the task doing all that. A new search, or `clear()`,
  // cancels the search before it, the directory's future included, and a cancelled search
  // never changes `status` again. Letting the model go cancels its search as well: nothing
  // it started may outlive it, or keep it alive.

  /// Shows `.searching(text)` at once; after `debounce`, shows the names for `text`, or
  /// `.failed`. Returns the task doing the search, so callers can wait for it.
  @discardableResult
  func search(_ text: String) -> Task<Void, Never> {
    Task {}
  }

  /// Cancels the search in progress and shows `.idle`.
  func clear() {}
}
