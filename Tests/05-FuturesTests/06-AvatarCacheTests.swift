import CoroutineKit
import LegacyKit
import Synchronization
import Testing
import WorkbookTesting

@testable import Futures

private enum DownloadError: Error, Equatable {
  case offline
}

private func avatarOf(_ userID: String) -> Avatar {
  Avatar(userID: userID, imageData: Array(userID.utf8))
}

/// A legacy loader the tests drive: every download is a `CoPromise` that stays pending until
/// the test completes it, unless the loader was told to answer by itself.
private final class FakeLoader: AvatarLoading {
  private struct State {
    var downloads: [(userID: String, promise: CoPromise<Avatar>)] = []
    var answer: (result: Result<Avatar, any Error>?, script: CallbackScript)?
  }

  private let state = Mutex(State())

  /// A loader whose downloads wait for the test.
  init() {}

  /// A loader that answers every download by itself, as `script` says; with `nil`, with
  /// the user's own avatar.
  init(answering result: Result<Avatar, any Error>? = nil, _ script: CallbackScript) {
    state.withLock { $0.answer = (result, script) }
  }

  func loadAvatar(for userID: String) -> CoFuture<Avatar> {
    let promise = CoPromise<Avatar>()
    let answer = state.withLock { state in
      state.downloads.append((userID, promise))
      return state.answer
    }
    if let answer {
      let result = answer.result ?? .success(avatarOf(userID))
      answer.script.deliver { promise.complete(with: result) }
    }
    return promise
  }

  /// How many downloads were started, of `userID` or of anyone.
  func downloads(of userID: String? = nil) -> Int {
    state.withLock { state in
      state.downloads.filter { userID == nil || $0.userID == userID }.count
    }
  }

  /// Download number `index` (from 0), in the order they were started.
  func download(_ index: Int) -> CoPromise<Avatar> {
    state.withLock { $0.downloads[index].promise }
  }

  /// True if the cache cancelled any of the legacy futures.
  var anyCancelled: Bool {
    state.withLock { state in state.downloads.contains { $0.promise.isCanceled } }
  }

  /// Completes every download started so far that is still pending: with the user's
  /// avatar, or with `error`. Later downloads get the same answer at once, so a caller
  /// that a busy machine let in late is not left waiting.
  func finishAll(failing error: (any Error)? = nil) {
    let outcome: Result<Avatar, any Error>? = error.map { .failure($0) }
    let pending = state.withLock { state in
      state.answer = (outcome, .synchronously)
      return state.downloads
    }
    for (userID, promise) in pending {
      promise.complete(with: outcome ?? .success(avatarOf(userID)))
    }
  }

  /// Lets later downloads wait for the test again.
  func holdNewDownloads() {
    state.withLock { $0.answer = nil }
  }
}

private let valueHint =
  "every caller of avatar(for:) must be resumed with the download's result when it arrives"
private let failureHint =
  "a failed download never resumed the callers waiting for it: every one of them must get "
  + "its error (whenSuccess only hears about values, whenComplete hears about failures too)"
private let cancelHint =
  "a cancelled caller must stop waiting at once, with CancellationError, while the download "
  + "goes on for the others; Task.value and a continuation without a cancellation handler "
  + "both wait for the download whatever happens to the task that waits, so wrap this "
  + "caller's own wait in withTaskCancellationHandler and resume only its continuation"

/// Starts a caller of `avatar(for:)` as a task of its own.
private func caller(
  _ cache: AvatarCache, _ userID: String
) -> Task<Avatar, any Error> {
  Task { try await cache.avatar(for: userID) }
}

/// The callers' results, each within a deadline.
private func results(
  of callers: [Task<Avatar, any Error>], hint: String
) async throws -> [Result<Avatar, any Error>] {
  var results: [Result<Avatar, any Error>] = []
  for (index, task) in callers.enumerated() {
    let result = try await withDeadline(
      .seconds(2), "avatar(for:) in caller \(index + 1) of \(callers.count)", hint: hint
    ) {
      await task.result
    }
    results.append(result)
  }
  return results
}

@Suite("5.6 Avatar cache")
struct AvatarCacheTests {
  @Test(
    "Gets the avatar, however the legacy future completes",
    arguments: [CallbackScript.synchronously, .default, .later(.milliseconds(100)), .twice])
  func getsTheAvatar(script: CallbackScript) async throws {
    let loader = FakeLoader(script)
    let cache = AvatarCache(loader: loader)

    let avatar = try await withDeadline(.seconds(2), "avatar(for:)", hint: valueHint) {
      try await cache.avatar(for: "ada")
    }

    #expect(avatar == avatarOf("ada"), "avatar(for:) must return the downloaded avatar")
    #expect(loader.downloads() == 1, "one call, one download")
  }

  @Test("Suspends instead of blocking: the download completes on the caller's own thread")
  func suspendsInsteadOfBlocking() async throws {
    let executor = OneThreadExecutor()
    // The legacy future completes on the thread that asked for it, once that thread is
    // free, as a future completed on the main queue would for a caller on the main actor.
    let loader = FakeLoader(.onThreadOf(executor))
    let cache = AvatarCache(loader: loader)

    let avatar = try await withDeadline(
      .seconds(3), "avatar(for:)", hint: valueHint, on: executor
    ) {
      try await cache.avatar(for: "ada")
    }

    let held = executor.longestJob
    #expect(
      held < .milliseconds(500),
      """
      avatar(for:) blocked its thread instead of suspending: it held the only thread it had \
      for \(held), while the download it waited for was to complete on that same thread. \
      Likely cause: a semaphore or another blocking wait; suspend with a continuation
      """)
    #expect(avatar == avatarOf("ada"), "avatar(for:) must return the downloaded avatar")
  }

  @Test("Callers asking for one user at the same time share one download")
  func concurrentCallersShareOneDownload() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)

    let callers = (0..<5).map { _ in caller(cache, "ada") }
    // The download stays pending while the callers arrive: until a second one starts (the
    // mistake), or for 300 ms (plenty for five tasks to call, even on a busy machine).
    _ = await eventually(within: .seconds(2)) { loader.downloads() >= 1 }
    _ = await eventually(within: .milliseconds(300)) { loader.downloads() >= 2 }
    loader.finishAll()
    let avatars = try await results(of: callers, hint: valueHint)

    let downloads = loader.downloads()
    #expect(
      downloads == 1,
      """
      five callers asked for the same avatar at the same time and \(downloads) downloads \
      started: callers must share one download while it is on its way; look for it and \
      claim it in one step (an actor that awaits between the two lets every caller start \
      its own)
      """)
    for (index, result) in avatars.enumerated() {
      #expect(
        (try? result.get()) == avatarOf("ada"),
        "caller \(index + 1) of 5 got \(result) instead of the shared download's avatar")
    }
  }

  @Test("Different users are downloaded at the same time")
  func differentUsersDownloadAtOnce() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)

    let ada = caller(cache, "ada")
    let grace = caller(cache, "grace")
    let both = await eventually(within: .seconds(2)) { loader.downloads() == 2 }
    loader.finishAll()
    _ = try await results(of: [ada, grace], hint: valueHint)

    #expect(
      both,
      """
      the second user's download only started once the first one had ended: a download \
      for one user must not hold up the others
      """)
  }

  @Test("A downloaded avatar is kept: later calls do not download again")
  func keepsTheAvatar() async throws {
    let loader = FakeLoader(.default)
    let cache = AvatarCache(loader: loader)

    let first = try await withDeadline(.seconds(2), "avatar(for:)", hint: valueHint) {
      try await cache.avatar(for: "ada")
    }
    let second = try await withDeadline(.seconds(2), "avatar(for:)", hint: valueHint) {
      try await cache.avatar(for: "ada")
    }

    #expect(
      first == avatarOf("ada") && second == avatarOf("ada"),
      "both calls must return the avatar, the second one from the cache")
    let downloads = loader.downloads()
    #expect(
      downloads == 1,
      """
      the avatar was downloaded \(downloads) times: once downloaded, it must be kept and \
      returned to every later caller
      """)
  }

  @Test("A failed download reaches every caller waiting for it, and is not kept")
  func failureIsSharedButNotKept() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)

    let callers = (0..<3).map { _ in caller(cache, "ada") }
    _ = await eventually(within: .seconds(2)) { loader.downloads() >= 1 }
    _ = await eventually(within: .milliseconds(200)) { loader.downloads() >= 2 }
    loader.finishAll(failing: DownloadError.offline)
    let outcomes = try await results(of: callers, hint: failureHint)

    for (index, outcome) in outcomes.enumerated() {
      #expect(
        throws: DownloadError.offline,
        "caller \(index + 1) of 3 must get the failed download's own error"
      ) {
        try outcome.get()
      }
    }

    // The next caller downloads again, and this time it works.
    loader.holdNewDownloads()
    let downloadsSoFar = loader.downloads()
    let retry = caller(cache, "ada")
    let retried = await eventually(within: .seconds(2)) { loader.downloads() > downloadsSoFar }
    loader.finishAll()
    let again = try await withDeadline(
      .seconds(2), "avatar(for:) after a failure", hint: valueHint
    ) {
      await retry.result
    }
    #expect(
      retried,
      """
      a failed download was kept: the next call got \(again) without downloading again; \
      forget a download that fails, so that the next caller tries again
      """)
    #expect(
      (try? again.get()) == avatarOf("ada"),
      "after a failed download, the next call must download again and get the avatar")
  }

  @Test("A cancelled caller stops waiting at once; the others still get the avatar")
  func cancelledCallerLeavesAlone() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)

    let leaving = caller(cache, "ada")
    _ = await eventually(within: .seconds(2)) { loader.downloads() >= 1 }
    let staying = caller(cache, "ada")
    try await Task.sleep(for: .milliseconds(50))

    leaving.cancel()
    let left = try await withDeadline(
      .seconds(2), "avatar(for:) after its task was cancelled", hint: cancelHint
    ) {
      await leaving.result
    }

    #expect(
      throws: CancellationError.self,
      "a caller whose task was cancelled must throw CancellationError, and at once"
    ) {
      try left.get()
    }
    let cancelledTheDownload = loader.anyCancelled
    #expect(
      cancelledTheDownload == false,
      """
      one caller's cancellation cancelled the download the others were waiting for: the \
      download belongs to the cache, not to the caller that started it; let the cancelled \
      caller go, and leave the legacy future alone
      """)

    loader.finishAll()
    let stayed = try await withDeadline(.seconds(2), "avatar(for:)", hint: valueHint) {
      await staying.result
    }
    #expect(
      (try? stayed.get()) == avatarOf("ada"),
      """
      the caller that stayed got \(stayed) instead of the avatar: another caller's \
      cancellation must not reach it
      """)
  }

  @Test("When every caller has gone, the download still finishes and is kept")
  func downloadOutlivesItsCallers() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)

    let leaving = caller(cache, "ada")
    _ = await eventually(within: .seconds(2)) { loader.downloads() >= 1 }
    leaving.cancel()
    _ = try await withDeadline(
      .seconds(2), "avatar(for:) after its task was cancelled", hint: cancelHint
    ) {
      await leaving.result
    }
    let cancelledTheDownload = loader.anyCancelled
    #expect(
      cancelledTheDownload == false,
      """
      the only caller's cancellation cancelled the download: the download belongs to the \
      cache, and goes on so that its avatar is there for the next caller
      """)

    // From here on, a cache that downloads again gets an answer at once too, so the test
    // can say what happened.
    loader.finishAll()
    let later = caller(cache, "ada")
    let avatar = try await withDeadline(.seconds(2), "avatar(for:)", hint: valueHint) {
      try await later.value
    }

    #expect(
      avatar == avatarOf("ada"),
      "the caller after a cancelled one must get the avatar that was downloaded meanwhile")
    let downloads = loader.downloads()
    #expect(
      downloads == 1,
      """
      the avatar was downloaded \(downloads) times: the first download, whose caller had \
      gone, must still be kept when it arrives
      """)
  }
}
