import CoroutineKit
import Dispatch
import Testing
import WorkbookTesting

@testable import Structured

private enum DirectoryError: Error {
  case offline
}

private let debounce = Duration.milliseconds(300)

private let debounceHint =
  "search() must wait the debounce with try await Task.sleep(for: debounce, clock: clock), "
  + "on the clock the model was given (Task.sleep(for:) alone waits on the real clock)"

private let lookupHint =
  "the search never got past waiting for the directory's future: resume the continuation "
  + "from whenComplete, whatever the result"

/// Returns once `model`'s search for `text` is asleep in its debounce on `clock`; stops the
/// test at once if `search(_:)` did not show `.searching(text)` before it returned.
@MainActor
private func debounceStarted(
  _ text: String, by model: PeopleSearchModel, on clock: ManualClock,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws {
  try #require(
    model.status == .searching(text),
    "search() must show .searching(text) before it returns: the body of a new Task runs later",
    sourceLocation: sourceLocation)
  try await withDeadline(
    .seconds(2), "search(\"\(text)\") starting its debounce", hint: debounceHint,
    sourceLocation: sourceLocation
  ) { await clock.sleeping() }
}

/// Starts `model.search(text)` and returns its task once the debounce is over and the
/// search has asked `directory` for `text` (its lookup pending, or answered).
@MainActor
private func searchLookingUp(
  _ text: String, by model: PeopleSearchModel, on clock: ManualClock,
  in directory: FakeDirectory, sourceLocation: SourceLocation = #_sourceLocation
) async throws -> Task<Void, Never> {
  let search = model.search(text)
  try await debounceStarted(text, by: model, on: clock, sourceLocation: sourceLocation)
  clock.advance(by: debounce)
  await eventually("search(\"\(text)\") to look \"\(text)\" up") { @Sendable in
    directory.future(for: text) != nil
  }
  return search
}

/// A people directory that answers each lookup later, on a background queue, unless told to
/// keep the lookup pending for the test to answer.
private final class FakeDirectory: Sendable {
  /// The texts looked up, in order.
  let queries = Locked<[String]>([])
  /// The futures handed out, by text.
  let futures = Locked<[String: CoPromise<[String]>]>([:])
  /// Texts whose lookups stay pending until the test completes them.
  let held: Set<String>
  /// Texts whose lookups fail.
  let failing: Set<String>
  /// How long a lookup takes.
  let delay: Duration

  init(
    holding held: Set<String> = [], failing: Set<String> = [],
    answeringAfter delay: Duration = .milliseconds(10)
  ) {
    self.held = held
    self.failing = failing
    self.delay = delay
  }

  static func names(for text: String) -> [String] {
    ["\(text.capitalized) Lovelace", "\(text.capitalized) Yonath"]
  }

  var lookup: @Sendable (String) -> CoFuture<[String]> {
    { [self] text in
      let promise = CoPromise<[String]>()
      queries.withLock { $0.append(text) }
      futures.withLock { $0[text] = promise }
      if !held.contains(text) {
        let failing = failing.contains(text)
        DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) {
          if failing {
            promise.fail(DirectoryError.offline)
          } else {
            promise.success(FakeDirectory.names(for: text))
          }
        }
      }
      return promise
    }
  }

  func future(for text: String) -> CoPromise<[String]>? {
    futures.withLock { $0[text] }
  }
}

/// The contract of `search(_:)` and `clear()`: each path, what the screen shows and what the
/// directory sees, and the test that checks it (— where a column does not apply, and why).
///
/// | path | status | directory, future | model's lifetime | actor, clock, timing |
/// | --- | --- | --- | --- | --- |
/// | a search to its end | `.searching` at once, then the names: `showsTheNames` | one lookup, after the debounce: `showsTheNames` | — | the model's clock, once: `showsTheNames` |
/// | the lookup fails | `.failed`: `showsFailed` | — | — | — |
/// | the directory cancels the lookup itself | — `.failed`, or `.searching` left on screen: not promised, an edge the article leaves open (a legacy future's cancel may be read as the directory's failure or as a cancel) | | | |
/// | cancelled just as the debounce ends, before the search runs on | the newest search's | no lookup left running for nobody: `cancelledAsTheDebounceEnds` | — | — |
/// | typing during the debounce | the newest search's: `typingDuringTheDebounce` | only the newest text looked up: `typingDuringTheDebounce` | — | — |
/// | the same text typed again during the lookup | the newest search's, the first changes nothing: `sameTextAgain` | — | — | — |
/// | typing during the lookup | the newest search's: `typingDuringTheLookup` | the old future cancelled, its late answer ignored: `typingDuringTheLookup` | — | — |
/// | the answer (names or a failure) lands as a newer search or `clear()` cancels | the newer status stays: `answerAsTheSearchIsCancelled` | — | — | answered inside the cancelling job: `answerAsTheSearchIsCancelled` |
/// | `clear()` | `.idle` at once, and it stays: `clearCancels` | no lookup after a cleared debounce, the future cancelled: `clearCancels` | — | — |
/// | the model let go | — | its future cancelled: `nothingOutlivesTheModel` | released, its search cancelled, in the debounce or the lookup: `nothingOutlivesTheModel`; before its task first ran, which then ends without touching it: `releasedBeforeItsTaskRuns` | — |
/// | the lookup awaited by polling `future.result` | — not caught: the search runs on the main actor, where no test can count its wake-ups; the names come at most one poll late | | | |
/// | the returned task cancelled by its caller | — not promised: the task is returned to be awaited; `clear()` and a newer search are what cancel a search | | | |
/// | a slow directory (2.5 s) | the names: `slowDirectory` | — | — | the wait blocks no thread: `slowDirectory` |
/// | a second search after one ended | — each search is its own task; `typingDuringTheDebounce` and `clearCancels` run several on one model | | | |
@MainActor
@Suite("7.5 Challenge: a search that never outlives its screen")
struct PeopleSearchTests {
  @Test("search() shows .searching at once, waits the debounce on the clock, then the names")
  func showsTheNames() async throws {
    let clock = ManualClock()
    let directory = FakeDirectory()
    let model = PeopleSearchModel(debounce: debounce, clock: clock, directory: directory.lookup)

    let task = model.search("ada")
    try await debounceStarted("ada", by: model, on: clock)
    #expect(
      directory.queries.value.isEmpty,
      "search() looked \"ada\" up before the debounce was over: wait first, then look up")
    #expect(
      clock.requestedSleeps == [debounce],
      "search() should wait the model's debounce (300 ms) once, but asked for \(clock.requestedSleeps)"
    )

    clock.advance(by: debounce - .milliseconds(1))
    #expect(
      directory.queries.value.isEmpty, "search() looked \"ada\" up before the debounce was over")
    clock.advance(by: .milliseconds(1))
    try await withDeadline(.seconds(2), "search(\"ada\")", hint: lookupHint) { await task.value }

    #expect(directory.queries.value == ["ada"])
    #expect(model.status == .results(FakeDirectory.names(for: "ada")))
  }

  @Test("A lookup that fails shows .failed")
  func showsFailed() async throws {
    let clock = ManualClock()
    let directory = FakeDirectory(failing: ["ada"])
    let model = PeopleSearchModel(debounce: debounce, clock: clock, directory: directory.lookup)

    let task = model.search("ada")
    try await debounceStarted("ada", by: model, on: clock)
    clock.advance(by: debounce)
    try await withDeadline(
      .seconds(2), "search(\"ada\") whose lookup fails",
      hint: "a failed future must resume the continuation too: resume(with:) the result"
    ) { await task.value }

    #expect(model.status == .failed, "a lookup that fails must show .failed")
  }

  @Test(
    "Typing during the debounce cancels the search before it: only the newest text is looked up")
  func typingDuringTheDebounce() async throws {
    let clock = ManualClock()
    let directory = FakeDirectory()
    let model = PeopleSearchModel(debounce: debounce, clock: clock, directory: directory.lookup)

    let first = model.search("a")
    try await debounceStarted("a", by: model, on: clock)
    let second = model.search("ad")
    try await withDeadline(
      .seconds(2), "the first search(\"a\"), after search(\"ad\")",
      hint: "search() must cancel the search before it (keep its task, and cancel it), "
        + "and a cancelled debounce must end that task"
    ) { await first.value }
    #expect(
      model.status == .searching("ad"),
      """
      after search("ad"), the cancelled search("a") changed the screen to \(model.status): \
      check Task.isCancelled and change nothing
      """)

    try await debounceStarted("ad", by: model, on: clock)
    clock.advance(by: debounce)
    try await withDeadline(.seconds(2), "search(\"ad\")", hint: lookupHint) { await second.value }

    #expect(
      !directory.queries.value.contains("a"),
      """
      a search cancelled during its debounce still looked "a" up: keep the try on \
      Task.sleep, so that cancellation ends the search instead of going on to the lookup
      """)
    #expect(directory.queries.value == ["ad"])
    #expect(model.status == .results(FakeDirectory.names(for: "ad")))
  }

  @Test("Typing while the lookup is pending cancels its future, and its late answer never shows")
  func typingDuringTheLookup() async throws {
    let clock = ManualClock()
    let directory = FakeDirectory(holding: ["ada"])
    let model = PeopleSearchModel(debounce: debounce, clock: clock, directory: directory.lookup)

    let first = try await searchLookingUp("ada", by: model, on: clock, in: directory)
    let second = model.search("grace")
    try await withDeadline(
      .seconds(2), "the first search(\"ada\"), after search(\"grace\")",
      hint: "search() must cancel the search before it, and cancelling a search must cancel "
        + "its lookup's future (withTaskCancellationHandler), or it waits for an answer nobody wants"
    ) { await first.value }

    #expect(
      directory.future(for: "ada")?.isCanceled == true,
      "a new search should cancel the directory's future for the search before it")
    #expect(
      model.status == .searching("grace"),
      """
      the cancelled search("ada") changed the screen to \(model.status): its future fails \
      with CoFutureError.cancelled, which is no failure of the directory; check \
      Task.isCancelled and change nothing
      """)
    directory.future(for: "ada")?.success(["Too Late"])  // ignored: cancelled already

    try await debounceStarted("grace", by: model, on: clock)
    clock.advance(by: debounce)
    try await withDeadline(.seconds(2), "search(\"grace\")", hint: lookupHint) {
      await second.value
    }
    #expect(model.status == .results(FakeDirectory.names(for: "grace")))
  }

  @Test("A search for the same text again cancels the first, which then changes nothing")
  func sameTextAgain() async throws {
    let clock = ManualClock()
    let directory = FakeDirectory(holding: ["ada"])
    let model = PeopleSearchModel(debounce: debounce, clock: clock, directory: directory.lookup)

    let first = try await searchLookingUp("ada", by: model, on: clock, in: directory)
    let firstFuture = directory.future(for: "ada")
    // The same text again: the screen shows .searching("ada") either way, so only the
    // first search's own cancellation tells it that the screen is no longer its own.
    let second = model.search("ada")
    try await withDeadline(
      .seconds(2), "the first search(\"ada\"), after a second search(\"ada\")",
      hint: "search() must cancel the search before it, and cancelling a search must cancel "
        + "its lookup's future"
    ) { await first.value }
    #expect(
      model.status == .searching("ada"),
      """
      the first search("ada"), cancelled by a second search("ada"), changed the screen to \
      \(model.status): a replaced search is cancelled, and a cancelled search changes nothing, \
      even when the screen still shows its text (the search that replaced it may be for the \
      same text)
      """)

    try await debounceStarted("ada", by: model, on: clock)
    clock.advance(by: debounce)
    await eventually("the second search(\"ada\") to look \"ada\" up") { @Sendable in
      directory.future(for: "ada").map { $0 !== firstFuture } ?? false
    }
    directory.future(for: "ada")?.success(FakeDirectory.names(for: "ada"))
    try await withDeadline(.seconds(2), "the second search(\"ada\")", hint: lookupHint) {
      await second.value
    }
    #expect(model.status == .results(FakeDirectory.names(for: "ada")))
  }

  @Test(
    "A search cancelled just as its debounce ends starts no lookup that runs for nobody")
  func cancelledAsTheDebounceEnds() async throws {
    let clock = ManualClock()
    let directory = FakeDirectory(holding: ["ada", "grace"])
    let model = PeopleSearchModel(debounce: debounce, clock: clock, directory: directory.lookup)

    let first = model.search("ada")
    try await debounceStarted("ada", by: model, on: clock)
    // The debounce ends; before the search can run on (it needs the main actor, which this
    // job holds), the user types again.
    clock.advance(by: debounce)
    _ = model.search("grace")
    try await withDeadline(
      .seconds(2), "search(\"ada\"), cancelled as its debounce ended",
      hint: "search(\"ada\") was cancelled just as its debounce ended, then looked \"ada\" "
        + "up all the same and waited for the answer: a cancel that lands before the lookup "
        + "starts must reach that lookup too (a cancellation handler around the wait runs at "
        + "once in a task already cancelled)"
    ) { await first.value }

    let ada = directory.future(for: "ada")
    #expect(
      ada == nil || ada?.isCanceled == true,
      "search(\"ada\") was cancelled as its debounce ended, and its lookup is still running for nobody"
    )
    model.clear()
  }

  @Test(
    "An answer, names or a failure, that arrives just as a newer search, or clear(), cancels its search never shows",
    arguments: [false, true], [false, true])
  func answerAsTheSearchIsCancelled(byClearing: Bool, failing: Bool) async throws {
    let clock = ManualClock()
    let directory = FakeDirectory(holding: ["ada"])
    let model = PeopleSearchModel(debounce: debounce, clock: clock, directory: directory.lookup)

    let first = try await searchLookingUp("ada", by: model, on: clock, in: directory)
    // The directory answers here, on the main actor: the search has its names, but cannot
    // run on until this job ends, and before it does, the user types again (or clears).
    if failing {
      directory.future(for: "ada")?.fail(DirectoryError.offline)
    } else {
      directory.future(for: "ada")?.success(FakeDirectory.names(for: "ada"))
    }
    let second = byClearing ? nil : model.search("grace")
    if byClearing { model.clear() }
    let expected: SearchStatus = byClearing ? .idle : .searching("grace")
    try await withDeadline(
      .seconds(2), "the first search(\"ada\"), answered as it was cancelled",
      hint: lookupHint
    ) { await first.value }

    #expect(
      model.status == expected,
      Comment(
        rawValue: byClearing && !first.isCancelled
          ? """
          the directory answered search("ada") just before clear(), and the screen then showed \
          \(model.status) instead of .idle: clear() did not cancel search("ada") (its task was \
          never cancelled), so the search went on and showed its answer after the screen was \
          cleared
          """
          : """
          the directory answered search("ada") just as \(byClearing ? "clear()" : "search(\"grace\")") \
          cancelled it, and the screen then showed \(model.status) instead of \(expected): an \
          answer can arrive at the very moment its search is cancelled, and a cancelled search \
          never changes status again, whatever it was waiting for
          """))
    model.clear()
    if let second {
      try await withDeadline(
        .seconds(2), "search(\"grace\"), after clear()",
        likelyCause: {
          second.isCancelled
            ? lookupHint
            : "clear() did not cancel search(\"grace\"), the search in progress (its task was "
              + "never cancelled), so it still waits in its debounce"
        }
      ) {
        await second.value
      }
    }
  }

  @Test("A directory that takes 2.5 seconds holds no thread while the search waits")
  func slowDirectory() async throws {
    // Longer than the watchdog's patience (1.5 s): a wait for the directory that blocks a
    // thread (a semaphore, a dispatch group, a sleep loop), on the main actor or in a task
    // of its own, is seen and named.
    let clock = ManualClock()
    let directory = FakeDirectory(answeringAfter: .milliseconds(2500))
    let model = PeopleSearchModel(debounce: debounce, clock: clock, directory: directory.lookup)

    let task = model.search("ada")
    try await debounceStarted("ada", by: model, on: clock)
    clock.advance(by: debounce)
    try await withDeadline(
      .seconds(6), "search(\"ada\") with a directory that takes 2.5 seconds", hint: lookupHint
    ) { await task.value }

    #expect(model.status == .results(FakeDirectory.names(for: "ada")))
  }

  @Test("clear() cancels the search in progress and shows .idle")
  func clearCancels() async throws {
    let clock = ManualClock()
    let directory = FakeDirectory(holding: ["ada"])
    let model = PeopleSearchModel(debounce: debounce, clock: clock, directory: directory.lookup)

    // In the debounce: no lookup follows.
    let waiting = model.search("a")
    try await debounceStarted("a", by: model, on: clock)
    model.clear()
    #expect(model.status == .idle, "clear() must show .idle at once")
    try await withDeadline(
      .seconds(2), "search(\"a\"), after clear()",
      hint: "clear() must cancel the search in progress, and a cancelled debounce must end it"
    ) { await waiting.value }
    clock.advance(by: debounce)

    // In the lookup: its future is cancelled.
    let looking = try await searchLookingUp("ada", by: model, on: clock, in: directory)
    model.clear()
    try await withDeadline(
      .seconds(2), "search(\"ada\"), after clear()",
      hint: "cancelling a search must cancel its lookup's future (withTaskCancellationHandler)"
    ) { await looking.value }

    #expect(
      !directory.queries.value.contains("a"),
      """
      a search cleared during its debounce still looked "a" up: keep the try on Task.sleep, \
      so that cancellation ends the search instead of going on to the lookup
      """)
    #expect(
      directory.future(for: "ada")?.isCanceled == true,
      "clear() should cancel the directory's future for the search in progress")
    #expect(
      model.status == .idle,
      """
      after clear(), the cancelled search changed the screen to \(model.status): check \
      Task.isCancelled and change nothing
      """)
  }

  @Test(
    "Letting the model go cancels its search, in the debounce or in the lookup: nothing outlives it",
    arguments: [false, true])
  func nothingOutlivesTheModel(inTheLookup: Bool) async throws {
    let clock = ManualClock()
    let directory = FakeDirectory(holding: ["ada"])
    weak var released: PeopleSearchModel?
    let task: Task<Void, Never>
    do {
      let model = PeopleSearchModel(debounce: debounce, clock: clock, directory: directory.lookup)
      released = model
      task = model.search("ada")
      try await debounceStarted("ada", by: model, on: clock)
      if inTheLookup {
        clock.advance(by: debounce)
        await eventually("search(\"ada\") to look \"ada\" up") { @Sendable in
          directory.future(for: "ada") != nil
        }
      }
    }
    let phase = inTheLookup ? "waiting for its lookup" : "in its debounce"

    guard released == nil else {
      Issue.record(
        """
        the model is still alive after its owner let it go, \(phase): its search task holds \
        it strongly (capture [weak self], and use self only to set status, after each await)
        """)
      return
    }
    let ended = await eventually { @Sendable in
      inTheLookup ? directory.future(for: "ada")?.isCanceled == true : clock.sleeperCount == 0
    }
    #expect(
      ended,
      """
      letting the model go, \(phase), did not cancel its search: cancel the task in \
      deinit (keep it in a property)
      """)
    guard ended else { return }
    try await withDeadline(
      .seconds(2), "search(\"ada\"), after the model was let go",
      hint: "cancelling a search must end its task"
    ) { await task.value }
    #expect(directory.queries.value == (inTheLookup ? ["ada"] : []))
  }

  @Test("A model let go right after search() returns, before its task has run, ends quietly")
  func releasedBeforeItsTaskRuns() async throws {
    let clock = ManualClock()
    let directory = FakeDirectory(holding: ["ada"])
    weak var released: PeopleSearchModel?
    let task: Task<Void, Never>
    do {
      let model = PeopleSearchModel(debounce: debounce, clock: clock, directory: directory.lookup)
      released = model
      // On the main actor, the search's task cannot start before this test suspends: the
      // model is gone by the time its body first runs.
      task = model.search("ada")
    }
    guard released == nil else {
      Issue.record(
        Comment(
          rawValue: "the model is still alive after its owner let it go, before its search "
            + "began: its search task holds it strongly"))
      return
    }
    guard task.isCancelled else {
      Issue.record(
        Comment(
          rawValue: "letting the model go, before its search began, did not cancel its search: "
            + "nothing cancels the task when the model goes"))
      return
    }
    try await withDeadline(
      .seconds(2), "search(\"ada\"), its model let go before the search began",
      hint: "cancelling a search must end its task"
    ) { await task.value }
    #expect(
      directory.queries.value.isEmpty,
      "the model was let go before its search began, and the search still looked \(directory.queries.value) up"
    )
  }
}
