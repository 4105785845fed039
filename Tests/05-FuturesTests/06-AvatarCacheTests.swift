import CoroutineKit
import Foundation
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

/// Starts one caller for "ada", and cancels it once its download has started: returns once
/// that caller has ended, the download (if the cache keeps it) still on its way.
private func oneCallerLeaves(_ cache: AvatarCache, _ loader: FakeLoader) async throws {
  let leaving = caller(cache, "ada")
  _ = await eventually(within: .seconds(2)) { loader.downloads() >= 1 }
  leaving.cancel()
  _ = try await withDeadline(
    .seconds(2), "avatar(for:) after its task was cancelled", hint: cancelHint
  ) {
    await leaving.result
  }
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

/// The contract of `avatar(for:)`: each path, what the callers and the loader see, and the
/// test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | downloads, legacy future | thread, timing |
/// | --- | --- | --- | --- |
/// | first call | the avatar: `getsTheAvatar` | one: `getsTheAvatar` | the future completes inside the call, soon, later, twice: `getsTheAvatar`; on the caller's own thread: `suspendsInsteadOfBlocking` |
/// | callers for one user at once | the one avatar each: `concurrentCallersShareOneDownload` | one, shared: `concurrentCallersShareOneDownload` | — |
/// | callers for different users | each their own: `differentUsersDownloadAtOnce` | at the same time: `differentUsersDownloadAtOnce` | — |
/// | a later call | the kept avatar: `keepsTheAvatar` | no new one: `keepsTheAvatar`; none for 300 users either (no limit, no eviction): `keepsEveryAvatar` | — |
/// | the download fails | its error, to every waiter, none of whom downloads again on its own: `failureIsSharedButNotKept`, `joinersOfAFailedDownloadDoNotRetry` | forgotten, the next call downloads: `failureIsSharedButNotKept` | — |
/// | asked again the moment the failure answers | — | a new download, not the old error: `askingAgainRightAfterAFailure` | the ask lands while the failure resumes its callers: `askingAgainRightAfterAFailure` |
/// | a caller cancelled while waiting | `CancellationError`, at once; the others get the avatar: `cancelledCallerLeavesAlone`; a caller who joins after one has left waits beside the others, each its own waiter: `cancelledCallerLeavesAlone` | the download goes on, its future not cancelled: `cancelledCallerLeavesAlone` | — |
/// | every caller cancelled | `CancellationError` | the download finishes and is kept: `downloadOutlivesItsCallers` | — |
/// | a slow download (2.5 s) | the avatar: `slowDownload` | — | the wait blocks no thread: `slowDownload` |
/// | 16 downloads pending at once | — | — | no thread held per download (no coroutine blocked in `await()`): `waitingDownloadsHoldNoThreads` |
/// | cancelled at any moment as it begins to wait | `CancellationError`, at once: `cancelledAsItBeginsToWait` | the download goes on: `cancelledAsItBeginsToWait` | a cancel at a random moment of the caller's first microseconds, from another thread: `cancelledAsItBeginsToWait` |
/// | two callers at the very same moment | the avatar each | one download: `simultaneousCallersShareOneDownload` | released together on two threads, random offsets: `simultaneousCallersShareOneDownload` |
/// | cancelled while the download's completion resumes it | the avatar or `CancellationError` | — | no deadlock with `onCancel`: `completionRacesCancellation` |
/// | cancelled as the download answers | the avatar or `CancellationError` (the task states no preference), resumed once, whether the cancel lands after the avatar resumed the caller and before it ran: `cancelledAfterTheAvatarArrived` | — | — |
/// | cancelled right after any look at its cancellation (between a check and the store) | `CancellationError`, at once: `cancelledRightAfterALook` | the download goes on | — |
/// | every caller cancelled, then a new caller before the download arrives | the avatar: `joinsADownloadWhoseCallersHaveGone` | no new one: it joins the download on its way, `joinsADownloadWhoseCallersHaveGone` | — |
/// | a caller cancelled before it asks | `CancellationError`: `cancelledBeforeItAsksLeavesNothingStuck` | no entry left claimed without a download: the next caller gets the avatar, `cancelledBeforeItAsksLeavesNothingStuck` | — |
/// | waiting while the download is on its way | — | — | no step on the caller's thread until the download answers (no polling): `waitsWithoutPolling` |
/// | who starts the download decided by a check and a set of a flag apart from the claim | — | — two callers in the nanoseconds between that check and set both start one; no test can stop a caller between two of its own locks, so only `simultaneousCallersShareOneDownload` lands there, on some runs (the hints say to decide it in the claim) | — |
@Suite("5.6 Avatar cache")
struct AvatarCacheTests {
  @Test(
    "Gets the avatar, however the legacy future completes",
    arguments: [CallbackScript.synchronously, .default, .later(.milliseconds(100)), .twice])
  func getsTheAvatar(script: CallbackScript) async throws {
    let loader = FakeLoader(script)
    let cache = AvatarCache(loader: loader)

    let hint =
      script.timing == .synchronously
      ? valueHint + "; here the legacy future completed at once, inside loadAvatar(for:), "
        + "before the caller had started waiting: a result that arrives before anyone waits "
        + "must be kept for the callers who come to wait for it"
      : valueHint
    let avatar = try await withDeadline(.seconds(2), "avatar(for:)", hint: hint) {
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

  @Test("Two callers arriving at the very same moment share one download, round after round")
  func simultaneousCallersShareOneDownload() async throws {
    // Two callers on threads of their own, released together each round, each after a
    // random few hundred nanoseconds: a lookup and a claim made in two separate steps leave
    // a gap that one of them lands in, in a share of the rounds that depends on how busy
    // the machine is. So the rounds go on for a while (seconds in the long form), each for
    // a user of its own, 50 to a batch; each caller runs a whole batch, so that both
    // threads stay busy from one round to the next.
    let budget = stressAmount(grading: Duration.milliseconds(500), verify: .seconds(4))
    let loader = FakeLoader(.synchronously)
    let cache = AvatarCache(loader: loader)
    let (left, right) = (OneThreadExecutor(), OneThreadExecutor())
    try await withOneStressAtATime {
      try await callersArriveTogether(cache, loader, on: (left, right), for: budget)
    }
  }

  /// The rounds of ``simultaneousCallersShareOneDownload()``, until `budget` has passed or
  /// two downloads start for one user.
  private func callersArriveTogether(
    _ cache: AvatarCache, _ loader: FakeLoader,
    on executors: (OneThreadExecutor, OneThreadExecutor), for budget: Duration
  ) async throws {
    let (left, right) = executors
    let clock = ContinuousClock()
    let start = clock.now

    var rounds = 0
    while clock.now - start < budget {
      let first = rounds
      let lines = (0..<50).map { _ in StartLine(parties: 2) }
      rounds += lines.count
      // Generous: on a busy machine each round may wait for both threads to get a core.
      try await withDeadline(
        .seconds(10), "avatar(for:) from two callers at once, 50 rounds", hint: valueHint
      ) {
        let callers = [left, right].map { executor in
          Task(executorPreference: executor) {
            for (offset, line) in lines.enumerated() {
              line.go(jitter: 0...600)
              _ = try? await cache.avatar(for: "user\(first + offset)")
            }
          }
        }
        for caller in callers { await caller.value }
      }
      guard loader.downloads() > rounds else { continue }
      let user = (first..<rounds).map { "user\($0)" }.first { loader.downloads(of: $0) > 1 }
      Issue.record(
        """
        two callers asked for \(user ?? "one user")'s avatar at the same moment and two \
        downloads started: both found no entry before either had claimed it. Looking for the \
        entry and claiming it must be one step, so that of two callers arriving together \
        exactly one starts the download
        """)
      return
    }
  }

  @Test("A caller cancelled at any moment as it begins to wait stops at once, round after round")
  func cancelledAsItBeginsToWait() async throws {
    // One download, pending throughout. Each round, a caller on a thread of its own joins
    // it, and a second thread, released with it, cancels it a random few microseconds
    // later: before it waits, as it starts to wait, or once it waits. Whichever, the caller
    // must stop at once with CancellationError. (A gap of a few nanoseconds, between a
    // caller's last look at cancellation and the lock it stores its continuation under, is
    // beyond the reach of such a race; the hints say how to leave no gap at all.)
    let budget = stressAmount(grading: Duration.milliseconds(200), verify: .seconds(1))
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)
    let starter = caller(cache, "ada")
    guard await eventually(within: .seconds(2), { loader.downloads() >= 1 }) else {
      Issue.record("avatar(for:) never started a download: \(await starter.result)")
      return
    }
    let executors = (OneThreadExecutor(), OneThreadExecutor())
    try await withOneStressAtATime {
      try await cancelsAsCallersBeginToWait(cache, on: executors, for: budget)
    }
    #expect(
      !loader.anyCancelled,
      "the callers cancelled as they began to wait cancelled the download: it belongs to the cache and goes on for every other caller"
    )
    loader.finishAll()
    _ = try await results(of: [starter], hint: valueHint)
  }

  @Test("A caller cancelled right after any look at its cancellation stops at once")
  func cancelledRightAfterALook() async throws {
    let loaders = Locked<[FakeLoader]>([])
    defer { for loader in loaders.value { loader.finishAll() } }
    let rounds = try await cancellingAfterEachLook(
      "avatar(for:)",
      lostCancelCause:
        "look at Task.isCancelled under the same lock where the continuation is stored: "
        + "onCancel takes that lock, so either the look sees the cancel or onCancel finds "
        + "the continuation"
    ) {
      let loader = FakeLoader()
      loaders.withLock { $0.append(loader) }
      let cache = AvatarCache(loader: loader)
      return { try await cache.avatar(for: "ada") }
    }

    expectEveryRoundThrewCancellationError(rounds, caller: "a caller")
  }

  /// The rounds of ``cancelledAsItBeginsToWait()``, until `budget` has passed or a
  /// cancelled caller is left waiting.
  private func cancelsAsCallersBeginToWait(
    _ cache: AvatarCache, on executors: (OneThreadExecutor, OneThreadExecutor),
    for budget: Duration
  ) async throws {
    let (callers, cancellers) = executors
    let clock = ContinuousClock()
    let start = clock.now

    while clock.now - start < budget {
      let lines = (0..<50).map { _ in StartLine(parties: 2) }
      let waiters = lines.map { line in
        Task(executorPreference: callers) {
          line.go(jitter: 0...0)
          return try await cache.avatar(for: "ada")
        }
      }
      let canceller = Task(executorPreference: cancellers) {
        for (line, waiter) in zip(lines, waiters) {
          line.go(jitter: 0...8_000)
          waiter.cancel()
        }
      }
      // Each round of the canceller's ends (a start line gives up after a second), however
      // busy the machine; only then is every caller cancelled, and each must stop at once.
      await canceller.value
      let outcomes = try await withDeadline(
        .seconds(2), "avatar(for:) cancelled as it began to wait",
        hint: cancelHint
          + "; or the cancel came between a look at Task.isCancelled and the lock where the "
          + "continuation is stored, and was lost: look under that lock"
      ) {
        var outcomes: [Result<Avatar, any Error>] = []
        for waiter in waiters { outcomes.append(await waiter.result) }
        return outcomes
      }
      if let kept = outcomes.first(where: { (try? $0.get()) != nil }) {
        Issue.record("a cancelled caller got \(kept) before the download had ended")
        return
      }
      if case .failure(let error) = outcomes.first(where: { outcome in
        if case .failure(let error) = outcome { return !(error is CancellationError) }
        return false
      }) {
        Issue.record(
          Comment(
            rawValue: "a caller cancelled as it began to wait threw \(error): a cancelled "
              + "caller stops with CancellationError, whatever the download is doing"))
        return
      }
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
    let avatars = try await results(of: [ada, grace], hint: valueHint).map { try? $0.get() }
    #expect(
      avatars == [avatarOf("ada"), avatarOf("grace")],
      "each user gets their own avatar; got \(avatars.map { $0.map(\.userID) ?? "no avatar" })")

    #expect(
      both,
      """
      the second user's download only started once the first one had ended: a download \
      for one user must not hold up the others
      """)
  }

  @Test("Sixteen downloads waiting at once hold no thread each")
  func waitingDownloadsHoldNoThreads() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)
    let users = (1...16).map { "user\($0)" }

    // Counted as a difference: coroutines of other tests running at the same time cancel out.
    let before = threadsNamed("coroutine")
    let callers = users.map { caller(cache, $0) }
    let started = await eventually(within: .seconds(2)) { loader.downloads() == users.count }
    // A moment for anything started per download to get going.
    try await Task.sleep(for: .milliseconds(100))
    let waiting = threadsNamed("coroutine") - before
    loader.finishAll()
    _ = try await results(of: callers, hint: valueHint)

    #expect(started, "each of 16 users' avatar should start its own download")
    #expect(
      waiting < 4,
      Comment(
        rawValue: "while 16 downloads were pending, \(waiting) coroutines were running: each "
          + "waited for its download with the legacy, blocking await(), which holds a thread "
          + "of its own for as long as the download takes (a thousand avatars, a thousand "
          + "threads), where a caller that suspends holds none"))
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

  @Test(
    "A cancelled caller stops waiting at once; the others, and one who joins after, get the avatar")
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

    // One more caller joins after the cancelled one has left: it waits beside the one that
    // stayed, each its own waiter.
    let joining = caller(cache, "ada")
    try await Task.sleep(for: .milliseconds(50))
    loader.finishAll()
    let stayed = try await withDeadline(
      .seconds(2), "avatar(for:) of the caller that stayed",
      hint: "the caller that stayed was never resumed: after a cancelled caller left, a caller "
        + "who joined took its place among the waiters (an id made from how many are waiting "
        + "repeats one still in use), and pushed it out"
    ) {
      await staying.result
    }
    let joined = try await withDeadline(.seconds(2), "avatar(for:)", hint: valueHint) {
      await joining.result
    }
    #expect(
      (try? stayed.get()) == avatarOf("ada"),
      """
      the caller that stayed got \(stayed) instead of the avatar: another caller's \
      cancellation must not reach it
      """)
    #expect(
      (try? joined.get()) == avatarOf("ada") && loader.downloads() == 1,
      "the caller who joined after the cancelled one had left got \(joined), with \(loader.downloads()) downloads: it shares the download on its way"
    )
  }

  @Test("A caller cancelled after the avatar reached it, before it ran again, is resumed once")
  func cancelledAfterTheAvatarArrived() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)
    let executor = OneThreadExecutor()

    let waiting = Task(executorPreference: executor) { try await cache.avatar(for: "ada") }
    // Queued behind the caller's first job, which ends once it waits for the download: the
    // caller's thread is then held, so the avatar resumes it and it cannot run yet.
    let gate = DispatchSemaphore(value: 0)
    let held = Locked(false)
    executor.schedule {
      held.withLock { $0 = true }
      _ = gate.wait(timeout: .now() + 5)
    }
    _ = await eventually(within: .seconds(5)) { held.value && loader.downloads() >= 1 }
    loader.finishAll()
    // Now, while the caller has its avatar but has not run: its cancellation handler runs
    // here, on this thread. It must find nothing left to resume.
    waiting.cancel()
    gate.signal()

    let result = try await withDeadline(
      .seconds(2), "avatar(for:) cancelled after its avatar arrived", hint: valueHint
    ) {
      await waiting.result
    }
    let gotTheAvatar = (try? result.get()) == avatarOf("ada")
    let gotCancelled = {
      if case .failure(let error) = result { error is CancellationError } else { false }
    }()
    #expect(
      gotTheAvatar || gotCancelled,
      "a caller cancelled as its avatar arrived must get the avatar or CancellationError, not \(result)"
    )
  }

  @Test("A download that completes while its caller is being cancelled does not deadlock")
  func completionRacesCancellation() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)
    // Completed from another thread once the caller waits; at that moment the caller is
    // cancelled from a third thread, while the completion is still resuming it.
    Thread.detachNewThread {
      let started = waitOnThisThread(upTo: .seconds(2)) { loader.downloads() >= 1 }
      // Time for the caller to store itself after starting the download.
      Thread.sleep(forTimeInterval: 0.1)
      if started { loader.download(0).complete(with: .success(avatarOf("ada"))) }
    }
    let outcome = try await withCancellationRacingResume(
      .seconds(3), "avatar(for:)", hint: valueHint
    ) {
      do {
        return Result<Avatar, any Error>.success(try await cache.avatar(for: "ada"))
      } catch {
        return .failure(error)
      }
    }
    let gotTheAvatar = (try? outcome.get()) == avatarOf("ada")
    let gotCancelled = {
      if case .failure(let error) = outcome { error is CancellationError } else { false }
    }()
    #expect(
      gotTheAvatar || gotCancelled,
      "a caller resumed and cancelled at once gets the avatar or CancellationError, not \(outcome)"
    )
  }

  @Test("A caller that asks again the moment a failed download answers it downloads again")
  func askingAgainRightAfterAFailure() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)
    // The first caller runs on an executor that lets the test act inside its resume: on the
    // thread that completes the download, before whatever the cache does after resuming
    // its callers.
    let probe = ResumeProbeExecutor()
    let first = Task(executorPreference: probe) { try await cache.avatar(for: "ada") }
    guard await eventually(within: .seconds(2), { loader.downloads() >= 1 }) else {
      Issue.record("avatar(for:) never started a download: \(await first.result)")
      return
    }

    let completer = Locked<ObjectIdentifier?>(nil)
    let again = Locked<Task<Avatar, any Error>?>(nil)
    let againEnded = Locked(false)
    let askAgain: @Sendable () -> Task<Avatar, any Error> = {
      Task {
        defer { againEnded.withLock { $0 = true } }
        return try await cache.avatar(for: "ada")
      }
    }
    probe.onNextResume(when: { completer.value == ObjectIdentifier(Thread.current) }) {
      // The first caller has its error; the same code asks again at once, as a retry
      // button would, while the cache is still inside the completion of the download.
      again.withLock { $0 = askAgain() }
      _ = waitOnThisThread(upTo: .seconds(1)) { loader.downloads() >= 2 || againEnded.value }
    }
    Thread.detachNewThread {
      completer.withLock { $0 = ObjectIdentifier(Thread.current) }
      loader.download(0).complete(with: .failure(DownloadError.offline))
    }
    let failed = try await withDeadline(
      .seconds(2), "avatar(for:) whose download fails", hint: failureHint
    ) {
      await first.result
    }
    #expect(
      throws: DownloadError.offline, "the first caller must get the failed download's error"
    ) {
      try failed.get()
    }
    // A cache that resumes its callers from a thread of its own (an actor's, say) is not
    // resumed on the completing thread: ask again now, as soon as the error is in.
    let retry = again.value ?? askAgain()
    _ = await eventually(within: .seconds(2)) { loader.downloads() >= 2 || againEnded.value }
    let downloads = loader.downloads()
    loader.finishAll()
    let retried = try await withDeadline(
      .seconds(2), "avatar(for:) asked again right after a failure", hint: valueHint
    ) {
      await retry.result
    }
    let got: String
    switch retried {
    case .success(let avatar): got = "\(avatar)"
    case .failure(let error): got = "the old error, \(error),"
    }
    #expect(
      downloads == 2,
      """
      the first caller asked again the moment it got the failed download's error, and got \
      \(got) without a new download: the failed download was still in the cache when its \
      callers heard of it. A failure is forgotten, so a caller that has heard of it and asks \
      again downloads again
      """)
  }

  @Test("A download that takes 2.5 seconds holds no thread while its callers wait")
  func slowDownload() async throws {
    // Longer than the watchdog's patience (1.5 s): a wait that blocks a thread (a semaphore,
    // a dispatch group, a sleep loop), in this task or one it starts, is seen and named.
    let loader = FakeLoader(.later(.milliseconds(2500)))
    let cache = AvatarCache(loader: loader)

    let avatar = try await withDeadline(
      .seconds(6), "avatar(for:) with a download that takes 2.5 seconds", hint: valueHint
    ) {
      try await cache.avatar(for: "ada")
    }

    #expect(avatar == avatarOf("ada"), "avatar(for:) must return the downloaded avatar")
  }

  @Test("When every caller has gone, the download still finishes and is kept")
  func downloadOutlivesItsCallers() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)

    try await oneCallerLeaves(cache, loader)
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

  @Test("A caller who asks while a download whose callers have all gone is on its way joins it")
  func joinsADownloadWhoseCallersHaveGone() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)

    try await oneCallerLeaves(cache, loader)

    // Nobody waits for the download now, and it is still on its way: the next caller joins
    // it, or (the mistake) starts another one, which it does at once.
    let joining = caller(cache, "ada")
    _ = await eventually(within: .milliseconds(300)) { loader.downloads() >= 2 }
    let downloads = loader.downloads()
    loader.finishAll()
    let joined = try await withDeadline(.seconds(2), "avatar(for:)", hint: valueHint) {
      await joining.result
    }

    #expect(
      downloads == 1,
      """
      every caller of ada's download had given up, and a caller who asked while that \
      download was still on its way started \(downloads - 1) more: the download goes on \
      for the cache when its callers leave, so it stays in the cache as the download on its \
      way, and whoever asks before it arrives waits for it (taking it out when the last \
      caller leaves downloads the same avatar twice)
      """)
    #expect(
      (try? joined.get()) == avatarOf("ada"),
      "the caller who joined the download on its way got \(joined) instead of the avatar")
  }

  @Test("A caller already cancelled when it asks leaves the cache working for the next caller")
  func cancelledBeforeItAsksLeavesNothingStuck() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)

    let cancelled = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await cache.avatar(for: "ada")
    }
    let gaveUp = try await withDeadline(
      .seconds(2), "avatar(for:) called from a task already cancelled", hint: cancelHint
    ) {
      await cancelled.result
    }
    #expect(
      throws: CancellationError.self,
      "a caller whose task was cancelled before it asked must throw CancellationError"
    ) {
      try gaveUp.get()
    }

    // The next caller, not cancelled, joins a download or starts one.
    let next = caller(cache, "ada")
    guard await eventually(within: .seconds(2), { loader.downloads() >= 1 }) else {
      Issue.record(
        """
        a caller cancelled before it asked left ada's entry in the cache as a download on \
        its way without starting the download, and the next caller waited for it with no \
        download ever made: every later caller for ada would wait forever. Whoever claims \
        the entry starts the download, cancelled or not (the download belongs to the cache); \
        a caller that stops first must claim nothing
        """)
      next.cancel()
      _ = try await withDeadline(
        .seconds(2), "avatar(for:) after its task was cancelled", hint: cancelHint
      ) {
        await next.result
      }
      return
    }
    loader.finishAll()
    let got = try await withDeadline(.seconds(2), "avatar(for:)", hint: valueHint) {
      await next.result
    }
    #expect(
      (try? got.get()) == avatarOf("ada"),
      "the caller after one cancelled before it asked got \(got) instead of the avatar")
  }

  @Test("A waiting caller is resumed by the download, not woken again and again")
  func waitsWithoutPolling() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)
    let executor = OneThreadExecutor()

    let waiting = Task(executorPreference: executor) { try await cache.avatar(for: "ada") }
    guard await eventually(within: .seconds(2), { loader.downloads() >= 1 }) else {
      Issue.record("avatar(for:) never started a download")
      waiting.cancel()
      return
    }
    // The caller has started the download and waits: on its thread, nothing should happen
    // until the download answers.
    let before = executor.jobsRun
    try await Task.sleep(for: .milliseconds(300))
    let steps = executor.jobsRun - before
    loader.finishAll()
    let result = try await withDeadline(.seconds(2), "avatar(for:)", hint: valueHint) {
      await waiting.result
    }

    #expect(
      steps <= 2,
      """
      while its download was on its way for 300 ms, a waiting caller of avatar(for:) ran \
      \(steps) separate steps on its thread: it woke up over and over to look for the result \
      (a Task.sleep loop?), so every caller of a feed wakes many times a second for as long \
      as the download takes, and gets its avatar only at its next look. Suspend once, and \
      let the download's result resume the waiting callers
      """)
    #expect(
      (try? result.get()) == avatarOf("ada"), "avatar(for:) must return the downloaded avatar")
  }

  @Test("Every avatar downloaded is kept, however many users there are")
  func keepsEveryAvatar() async throws {
    let loader = FakeLoader(.synchronously)
    let cache = AvatarCache(loader: loader)
    let users = (0..<300).map { "user\($0)" }

    try await withDeadline(.seconds(5), "avatar(for:) of 300 users, twice", hint: valueHint) {
      for user in users { _ = try await cache.avatar(for: user) }
      for user in users { _ = try await cache.avatar(for: user) }
    }

    let downloads = loader.downloads()
    #expect(
      downloads == users.count,
      """
      300 users' avatars were asked for twice, one after another, and \(downloads) downloads \
      were made, not 300: the cache let go of avatars it had downloaded (a limit on how many \
      it keeps, or an eviction), so they were downloaded again; the cache keeps every avatar
      """)
  }

  @Test("Callers that joined a download that fails get its error, and download nothing more")
  func joinersOfAFailedDownloadDoNotRetry() async throws {
    let loader = FakeLoader()
    let cache = AvatarCache(loader: loader)
    // Three callers on an executor that knows when they have all joined the download and
    // wait for it, however they wait.
    let settling = SettlingExecutor()
    let callers = (0..<3).map { _ in
      Task(executorPreference: settling) { try await cache.avatar(for: "ada") }
    }
    _ = await eventually(within: .seconds(2)) { settling.isIdle && loader.downloads() >= 1 }
    let downloadsBeforeTheFailure = loader.downloads()
    loader.finishAll(failing: DownloadError.offline)
    let outcomes = try await results(of: callers, hint: failureHint)

    let more = loader.downloads() - downloadsBeforeTheFailure
    #expect(
      more == 0,
      """
      three callers waited for one download, which failed, and \(more) more download(s) \
      started before they were answered: a caller that joined a failed download gets its \
      error, as the one who started it does; it does not try again on its own
      """)
    for (index, outcome) in outcomes.enumerated() {
      #expect(
        throws: DownloadError.offline,
        "caller \(index + 1) of 3 must get the failed download's own error"
      ) {
        try outcome.get()
      }
    }
  }
}
