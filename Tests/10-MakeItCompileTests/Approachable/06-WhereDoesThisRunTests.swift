import Dispatch
import Foundation
import Observation
import Testing
import WorkbookTesting

@testable import ApproachableConcurrency

/// The contract of the photo viewer: each path, what the screen sees, and the test that
/// checks it (— where a column does not apply, and why). The compile check (the module's
/// settings, no warning, no escape hatch) is the runner's; these tests check where the code
/// runs now that it compiles.
///
/// | path | photo, spinner, cache | where it runs | the caller's task (cancel, task-local values) |
/// | --- | --- | --- | --- |
/// | a photo opened | shown, decoded right, spinner on while it decodes and off after, stored: `opensAndShowsThePhoto` | the screen's state changes on the main actor: `stateChangesOnTheMainActor`; the decode leaves the main actor free (a heartbeat keeps ticking): `mainActorKeepsTickingDuringTheDecode` | the file's reads see the caller's task-local values: `readsSeeTheCallersTaskLocals` |
/// | the rows of a file | each in its place: `readsRowByRow` | read one at a time, in the decode's own task: `readsRowByRow` | — |
/// | the decode, while the main actor is held | every row read meanwhile: `theDecodeNeedsNoMainActor` | no part of it (a helper, a static method) needs the main actor | — |
/// | `Photo` left on the main actor (its `Equatable` conformance then isolated) | — allowed: the starter promises nothing about comparing photos off the main actor | | |
/// | a row that does not expand to the width (too short, too long) | throws `badRow`, nothing shown or stored, spinner off: `badRowThrows` | — | — |
/// | a read that fails | the file's own error, not `badRow`; nothing shown or stored: `readErrorComesThrough` | — | — |
/// | a name already in the cache (another viewer's) | the file is decoded all the same, its photo shown; a bad file still throws: `cachedNameIsDecodedAgain` | — | — |
/// | a viewer whose open failed goes away | nothing taken out of the cache (another viewer's photo of that name stays): `failedOpenReleasesNothing` | — | — |
/// | the opening task cancelled while decoding | throws `CancellationError`, nothing shown, spinner off: `cancellingStopsTheDecode` | — | the decode stops before the next row: `cancellingStopsTheDecode`; cancelled before it opens, no row read: `cancelledBeforeOpening` |
/// | the viewer released on the main actor (the screen closes) | its photo leaves the cache at once: `closingOnTheMainActorReleasesAtOnce` | the main actor, in place | — |
/// | the viewer released last on another thread | its photo leaves the cache soon after: `releasedElsewhereCleansUpOnTheMainActor` | on the main actor, not on that thread: `releasedElsewhereCleansUpOnTheMainActor` | — |
/// | two photos opened at once on one viewer | — the screen opens one photo at a time; `open` promises nothing more | | |
// The model belongs to the main actor, so these tests run there too. Serialized: the
// heartbeat test measures how free the main actor is, and the other tests hold it on purpose.
@MainActor
@Suite("10.6 Where does this run?", .serialized)
struct WhereDoesThisRunTests {
  private static let openHint =
    "open(_:named:) did not finish: the decode must read every row and return"

  @Test("Opening a photo decodes it and shows it, with the spinner on meanwhile, and stores it")
  func opensAndShowsThePhoto() async throws {
    let spinner = SpinnerProbe()
    // While the decode reads row 2, the test reads the spinner on the main actor.
    let file = ScriptedPhotoFile(height: 6) { row in
      if row == 2 { spinner.readOnTheMainActor() }
    }
    let opened = try await withDeadline(.seconds(5), "open(_:named:)", hint: Self.openHint) {
      try await Self.open(file, named: "harbour", spinner: spinner)
    }
    let seen = opened.state

    #expect(opened.thrown == nil, "open(_:named:) threw \(opened.thrown ?? ""), for a good file")
    #expect(seen.shown == file.expected, "the photo on screen is not the file's photo, decoded")
    #expect(!opened.spinnerBeforeOpening, "a new viewer must not show the spinner (isLoading)")
    // Nil when the main actor was busy (the decode ran there: the heartbeat test names it),
    // or when the model cannot be read from another thread (the last test names that).
    let whileDecoding = spinner.seen
    #expect(
      whileDecoding != false,
      "the spinner (isLoading) was off while the photo decoded: open(_:named:) must turn it on before the decode, and off once it ends"
    )
    #expect(!seen.isLoading, "the spinner (isLoading) must be off once open(_:named:) returns")
    #expect(
      seen.stored == file.expected,
      "open(_:named:) must store the photo it shows in the cache, under the name it was given")
    #expect(file.rowsRead == file.height, "the decode must read each row of the file once")
  }

  @Test(
    "A row that does not expand to the photo's width throws badRow, and nothing is shown",
    arguments: [false, true])
  func badRowThrows(tooLong: Bool) async throws {
    let file = ScriptedPhotoFile(height: 6, badRow: 2, badRowTooLong: tooLong)
    let outcome = try await withDeadline(.seconds(2), "open(_:named:)", hint: Self.openHint) {
      try await Self.open(file, named: "torn")
    }

    #expect(
      outcome.thrown == "\(PhotoDecodingError.badRow(2))",
      "open(_:named:) must throw PhotoDecodingError.badRow(2) for the file's bad row 2, which expands to \(tooLong ? "more" : "fewer") pixels than the photo is wide, not \(outcome.thrown ?? "nothing")"
    )
    #expect(
      outcome.state.shown == nil && outcome.state.stored == nil,
      "a failed decode shows and stores nothing")
    #expect(
      !outcome.state.isLoading, "the spinner (isLoading) must be off once open(_:named:) throws")
  }

  @Test("The main actor keeps ticking while a photo decodes: the screen does not freeze")
  func mainActorKeepsTickingDuringTheDecode() async throws {
    let ticks = Locked(0)
    let pacing = HeartbeatPacing(ticks: ticks)
    // Each read waits until the main actor has ticked since the previous one, as a slow
    // disk gives the screen time to draw. A decode that holds the main actor never sees a
    // tick: the first read gives up after a while, and the others no longer wait.
    let file = ScriptedPhotoFile(height: 12) { _ in pacing.waitForATick() }
    // No pool check: a wrong answer holds the main actor on purpose here, and this test
    // says so in its own words.
    let shown = try await withDeadline(
      .seconds(10), "open(_:named:)", hint: Self.openHint, checksPool: false
    ) {
      try await Self.openWithAHeartbeat(file, ticks: ticks)
    }

    #expect(shown == file.expected, "the photo on screen is not the file's photo, decoded")
    let ticked = pacing.rowsThatSawATick
    #expect(
      ticked == file.height,
      Comment(
        rawValue: ticked == 0
          ? "the main actor did not tick once while open(_:named:) decoded \(file.height) rows: "
            + "the decode ran on the main actor and held it, so the screen froze. In this "
            + "module an async function runs on its caller's actor unless it is @concurrent "
            + "(nonisolated alone keeps it there, and so does a Task {} started from the main "
            + "actor, or @MainActor); run the heavy decode off the main actor, and await it"
          : "the main actor ticked while only \(ticked) of \(file.height) rows were read: "
            + "part of the decode ran on the main actor and held it. Run the whole decode "
            + "off the main actor (@concurrent), and await it"))
  }

  @Test("No part of the decode needs the main actor: all rows are read while it is held")
  func theDecodeNeedsNoMainActor() async throws {
    let height = 12
    let waited = Locked<MainActorWait?>(nil)
    let fileBox = Locked<ScriptedPhotoFile?>(nil)
    // After the first read, the test holds the main actor until every row has been read (or
    // a second has passed): a decode that goes back to the main actor on its way (a helper
    // left there, an await of a main-actor method) stops until the hold ends.
    let file = ScriptedPhotoFile(height: height) { row in
      guard row == 0, let file = fileBox.value else { return }
      let wait = MainActorWait.holdUntil(atMost: .seconds(1), rows: { file.rowsRead }) {
        file.rowsRead >= height
      }
      waited.withLock { $0 = wait }
    }
    fileBox.withLock { $0 = file }
    let shown = try await withDeadline(
      .seconds(10), "open(_:named:)", hint: Self.openHint, checksPool: false
    ) {
      try await Self.openWithAHeartbeat(file, ticks: Locked(0))
    }

    #expect(shown == file.expected, "the photo on screen is not the file's photo, decoded")
    // A decode on the main actor cannot start the hold: the heartbeat test names that cause.
    guard let wait = waited.value, wait.started else { return }
    #expect(
      wait.conditionMet,
      Comment(
        rawValue: "while the test held the main actor after the first row, the decode read "
          + "only \(wait.seenWhenItEnded) of \(height) rows: part of it went back to the main "
          + "actor on its way. In this module a type, its methods and its static helpers belong "
          + "to the main actor unless marked otherwise, and a @concurrent function that awaits "
          + "one of them hops back for each call; make the decoder nonisolated, so that the "
          + "whole decode stays off the main actor"))
  }

  @Test(
    "The file is read row by row: one read at a time, each row in its place",
    .enabled(
      if: ProcessInfo.processInfo.activeProcessorCount >= 2,
      Comment(rawValue: "reads can overlap only on two cores or more")))
  func readsRowByRow() async throws {
    let height = 8
    let fileBox = Locked<ScriptedPhotoFile?>(nil)
    // The first read lasts until a second read starts (or a third of a second has passed):
    // a decode that reads rows from several tasks at once starts one meanwhile, and the
    // rows come back out of order.
    let file = ScriptedPhotoFile(height: height) { row in
      guard row == 0, let file = fileBox.value else { return }
      let start = ContinuousClock.now
      while file.rowsRead < 2, ContinuousClock.now - start < .milliseconds(300) {
        usleep(1_000)
      }
    }
    fileBox.withLock { $0 = file }
    // Without the pool check, whose squeeze would leave the decode one thread and hide the
    // overlap.
    let shown = try await withoutPoolCheck { @Sendable in
      try await withDeadline(
        .seconds(10), "open(_:named:)", hint: Self.openHint, checksPool: false
      ) {
        try await Self.openWithAHeartbeat(file, ticks: Locked(0))
      }
    }

    #expect(
      file.mostReadsAtOnce == 1,
      Comment(
        rawValue: "the decode read \(file.mostReadsAtOnce) rows at the same time: a PhotoFile "
          + "hands out its next row on each read, so rows read from several tasks at once "
          + "(a task group, one Task per row) come back in whatever order the tasks get them. "
          + "Read the rows one after the other, in the decode's own task"))
    #expect(
      shown == file.expected,
      "the photo on screen is not the file's photo, decoded: its rows are out of place")
  }

  @Test("The screen's state changes on the main actor, not on the thread that decoded")
  func stateChangesOnTheMainActor() async throws {
    let hold = MainActorHold()
    let heldAtLastRead = Locked(false)
    let height = 8
    // At the last read, the test holds the main actor from a job of its own until the photo
    // is shown or a second has passed: a photo shown meanwhile was set off the main actor.
    let file = ScriptedPhotoFile(height: height) { row in
      if row == height - 1 {
        let held = hold.holdFromElsewhere(atMost: .seconds(1))
        heldAtLastRead.withLock { $0 = held }
      }
    }
    let outcome = try await withDeadline(
      .seconds(10), "open(_:named:)", hint: Self.openHint, checksPool: false
    ) {
      try await Self.openWatchingThePhoto(file, hold: hold)
    }

    #expect(outcome == file.expected, "the photo on screen is not the file's photo, decoded")
    // When the decode ran on the main actor, the hold could not start: the heartbeat test
    // names that cause, and this one cannot tell.
    let changedWhileHeld = hold.changedWhileHeld
    if heldAtLastRead.value {
      #expect(
        !changedWhileHeld,
        """
        the photo changed off the main actor: it was set while the test held the main actor, \
        so open(_:named:) set it on the thread that decoded. The model's state is the \
        screen's (SwiftUI observes it on the main actor); keep the model on the main actor, \
        and put @concurrent on the decode alone, not on the model or its methods
        """)
    }
  }

  @Test("Cancelling the task that opens a photo stops the decode before the next row")
  func cancellingStopsTheDecode() async throws {
    let cancel = Locked<(@Sendable () -> Void)?>(nil)
    // The task is cancelled while the decode reads row 3 of 40.
    let file = ScriptedPhotoFile(height: 40) { row in
      if row == 3 { cancel.withLock { $0 }?() }
    }
    let opening = Task { @MainActor in try await Self.open(file, named: "storm") }
    // Set before the task starts: it waits for the main actor, which this test holds.
    cancel.withLock { $0 = { opening.cancel() } }
    let outcome = try await withDeadline(
      .seconds(5), "open(_:named:) in a cancelled task", hint: Self.openHint
    ) { try await opening.value }
    let seen = outcome.state

    #expect(
      file.rowsRead <= 5,
      Comment(
        rawValue: "the decode went on after the task that opened the photo was cancelled: it "
          + "read \(file.rowsRead) of \(file.height) rows, when it should stop before the next "
          + "row. A task started with Task.detached is a task of its own: the caller's "
          + "cancellation does not reach it (nor do its task-local values). Await the decode "
          + "in the caller's task, off the main actor (@concurrent), so that it checks the "
          + "caller's cancellation"))
    #expect(
      outcome.wasCancelled,
      "open(_:named:) must throw CancellationError when its task is cancelled, not \(outcome.thrown.map { "throw \($0)" } ?? "return normally")"
    )
    #expect(seen.shown == nil && seen.stored == nil, "a cancelled open shows and stores nothing")
    #expect(!seen.isLoading, "the spinner (isLoading) must be off once open(_:named:) throws")
  }

  @Test("A task cancelled before it opens a photo reads no row of it")
  func cancelledBeforeOpening() async throws {
    let file = ScriptedPhotoFile(height: 8)
    let opening = Task { @MainActor in try await Self.open(file, named: "fog") }
    // Cancelled before it starts: it waits for the main actor, which this test holds.
    opening.cancel()
    let outcome = try await withDeadline(
      .seconds(5), "open(_:named:) in a cancelled task", hint: Self.openHint
    ) { try await opening.value }

    #expect(
      file.rowsRead == 0 && outcome.wasCancelled,
      "the task that opened the photo was cancelled before it began, and the decode read \(file.rowsRead) row\(file.rowsRead == 1 ? "" : "s") and \(outcome.thrown.map { "threw \($0)" } ?? "returned normally"): the decode stops before the next row once its task is cancelled, and before the first row here, so cancellation must be checked before each read, not after it"
    )
  }

  @Test("The file's reads see the task-local values of the task that opens the photo")
  func readsSeeTheCallersTaskLocals() async throws {
    let file = ScriptedPhotoFile(height: 6)
    let shown = try await withDeadline(.seconds(2), "open(_:named:)", hint: Self.openHint) {
      try await Self.openTraced(file, as: "photo-viewer-7")
    }

    #expect(shown == file.expected, "the photo on screen is not the file's photo, decoded")
    let traces = file.traces
    #expect(
      traces.allSatisfy { $0 == "photo-viewer-7" },
      Comment(
        rawValue:
          "the file's reads saw the task-local trace \(traces.first.map { $0 ?? "nil" } ?? "nil"), "
          + "not the opening task's \"photo-viewer-7\": the decode ran in a task of its own. "
          + "Task.detached inherits neither the caller's task-local values nor its "
          + "cancellation; await the decode in the caller's task, off the main actor "
          + "(@concurrent)"))
  }

  @Test("A read that fails throws the file's own error, not badRow")
  func readErrorComesThrough() async throws {
    let file = ScriptedPhotoFile(height: 6, failingRow: 2)
    let opened = try await withDeadline(.seconds(5), "open(_:named:)", hint: Self.openHint) {
      try await Self.open(file, named: "harbour")
    }

    #expect(
      opened.thrown == "\(DiskFailure(row: 2))",
      "the file's read of row 2 failed with its own error, DiskFailure(row: 2), and open(_:named:) \(opened.thrown.map { "threw \($0)" } ?? "threw nothing"): a failed read is not a bad row (the disk failed, the photo may be fine), so its error must reach the caller unchanged"
    )
    #expect(
      opened.state.shown == nil && opened.state.stored == nil,
      "a failed open shows and stores nothing")
  }

  @Test("A photo already cached under its name is decoded again from the file it is opened from")
  func cachedNameIsDecodedAgain() async throws {
    let older = ScriptedPhotoFile(height: 4)
    let newer = ScriptedPhotoFile(height: 6)
    let broken = ScriptedPhotoFile(height: 6, badRow: 1)
    let (shown, brokenThrew) = try await withDeadline(
      .seconds(5), "open(_:named:)", hint: Self.openHint
    ) {
      try await Self.openUnderOneName(older, newer, broken)
    }

    #expect(
      shown == newer.expected && newer.rowsRead == newer.height,
      "a second viewer opened another file under the name \"harbour\", already in the cache, and showed \(shown == older.expected ? "the cached photo of the older file" : "something else") after reading \(newer.rowsRead) of its \(newer.height) rows: open(_:named:) decodes the file it is given; the cache keeps what was opened, it does not stand in for the file"
    )
    #expect(
      brokenThrew,
      "a file with a bad row opened under a cached name must still throw badRow: the file is read, whatever the cache holds"
    )
  }

  @Test("A viewer whose open failed takes nothing out of the cache when it goes")
  func failedOpenReleasesNothing() async throws {
    let good = ScriptedPhotoFile(height: 4)
    let bad = ScriptedPhotoFile(height: 4, badRow: 1)
    let (stillThere, expected) = try await withDeadline(
      .seconds(5), "open(_:named:)", hint: Self.openHint
    ) {
      try await Self.openThenFailUnderOneName(good, bad)
    }

    #expect(
      stillThere == expected,
      "one viewer showed \"harbour\"; a second viewer's open of another \"harbour\" failed, and when that second viewer went, the first one's photo left the cache: a viewer releases only a photo it stored, and this one stored nothing: it released the name it had only been asked to open"
    )
  }

  @Test("Closing the screen on the main actor takes its photo out of the cache at once")
  func closingOnTheMainActorReleasesAtOnce() async throws {
    let file = ScriptedPhotoFile(height: 4)
    let outcome = try await withDeadline(.seconds(5), "open(_:named:)", hint: Self.openHint) {
      try await Self.openAndClose(file)
    }
    let (stored, goneAtOnce, goneSoon) = outcome

    #expect(stored, "open(_:named:) must store the photo it shows in the cache")
    #expect(
      goneSoon,
      """
      the viewer was released and its photo stayed in the cache: the cleanup in its deinit \
      must still run. A deinit is nonisolated even in a main-actor class; make the deinit \
      itself run on the main actor, where the cache is
      """)
    #expect(
      !goneSoon || goneAtOnce,
      """
      the photo left the cache only later, not when the viewer was released on the main \
      actor: a Task started in deinit runs after the release, when the next screen may \
      already have counted the cache. A deinit isolated to the main actor runs in place when \
      the last reference goes away there
      """)
  }

  @Test("Released last on another thread, the viewer cleans up on the main actor")
  func releasedElsewhereCleansUpOnTheMainActor() async throws {
    let file = ScriptedPhotoFile(height: 4)
    let outcome = try await withDeadline(
      .seconds(5), "open(_:named:)", hint: Self.openHint, checksPool: false
    ) {
      try await Self.openAndLetGoElsewhere(file)
    }
    let (drop, goneSoon) = outcome

    switch drop {
    case .notSendable:
      Issue.record(
        """
        PhotoViewerModel is not Sendable any more, so the screen's tasks cannot share it: it \
        lost its main-actor isolation (a nonisolated class holds no promise about where its \
        state changes). Keep the model on the main actor, the module's default, and mark \
        nonisolated only the types that hold no UI state
        """)
      return
    case .threadStuck:
      Issue.record("the thread that let the viewer go did not finish within a second")
      return
    case .dropped(let goneWhileHeld):
      #expect(
        !goneWhileHeld,
        """
        the photo left the cache on the thread that released the viewer, while the main \
        actor was busy elsewhere (the test held it): the cache is the main actor's, and its \
        cleanup must run there too, whatever thread lets the viewer go
        """)
    }
    #expect(
      goneSoon,
      """
      the viewer was released on another thread and its photo stayed in the cache: the \
      cleanup in its deinit must run on the main actor soon after
      """)
  }
}

// MARK: - Scenarios, on the main actor as the screen runs them

extension WhereDoesThisRunTests {
  /// What the screen shows after `open(_:named:)`, and what it threw.
  fileprivate struct Opened: Sendable {
    /// Whether the new viewer showed a spinner before it was asked to open anything.
    var spinnerBeforeOpening: Bool
    var state: ViewerState
    var thrown: String?
    var wasCancelled: Bool
  }

  /// Opens `file` in a new viewer, as a screen does, and reports what it then shows;
  /// `spinner`, if given, may read the viewer's spinner meanwhile.
  fileprivate static func open(
    _ file: ScriptedPhotoFile, named name: String, spinner: SpinnerProbe? = nil
  ) async throws -> Opened {
    let cache = PhotoCache()
    let model = PhotoViewerModel(cache: cache)
    let spinnerBeforeOpening = model.isLoading
    spinner?.watch(model) { $0.isLoading }
    var thrown: (any Error)?
    do {
      try await model.open(file, named: name)
    } catch {
      thrown = error
    }
    return Opened(
      spinnerBeforeOpening: spinnerBeforeOpening,
      state: ViewerState(model, cache: cache, name: name),
      thrown: thrown.map { "\($0)" }, wasCancelled: thrown is CancellationError)
  }

  /// Opens `file` while a heartbeat ticks on the main actor.
  fileprivate static func openWithAHeartbeat(
    _ file: ScriptedPhotoFile, ticks: Locked<Int>
  )
    async throws -> Photo?
  {
    let heartbeat = Heartbeat(ticks: ticks)
    defer { heartbeat.stop() }
    let model = PhotoViewerModel(cache: PhotoCache())
    try await model.open(file, named: "meadow")
    return model.photo
  }

  /// Opens `file`, and tells `hold` when the photo changes, on the thread that changes it.
  fileprivate static func openWatchingThePhoto(
    _ file: ScriptedPhotoFile, hold: MainActorHold
  )
    async throws -> Photo?
  {
    let model = PhotoViewerModel(cache: PhotoCache())
    // Observation calls this on the thread that changes the photo, before it does.
    withObservationTracking {
      _ = model.photo
    } onChange: {
      hold.noteChange()
    }
    try await model.open(file, named: "dunes")
    return model.photo
  }

  /// Opens `file` with the trace `trace` set for the opening task.
  fileprivate static func openTraced(
    _ file: ScriptedPhotoFile, as trace: String
  ) async throws
    -> Photo?
  {
    try await ViewerTrace.$screen.withValue(trace) {
      let model = PhotoViewerModel(cache: PhotoCache())
      try await model.open(file, named: "pier")
      return model.photo
    }
  }

  /// Opens `older`, then `newer` and `broken` in two more viewers, all under one name and
  /// one cache; returns what the second viewer shows and whether the third open threw.
  fileprivate static func openUnderOneName(
    _ older: ScriptedPhotoFile, _ newer: ScriptedPhotoFile, _ broken: ScriptedPhotoFile
  ) async throws -> (Photo?, Bool) {
    let cache = PhotoCache()
    let first = PhotoViewerModel(cache: cache)
    let second = PhotoViewerModel(cache: cache)
    let third = PhotoViewerModel(cache: cache)
    try await first.open(older, named: "harbour")
    try await second.open(newer, named: "harbour")
    let threw = (try? await third.open(broken, named: "harbour")) == nil
    withExtendedLifetime((first, third)) {}
    return (second.photo, threw)
  }

  /// Opens `good` in one viewer, then fails to open `bad` under the same name in a second,
  /// which then goes away; returns what the cache holds a moment later, and `good`'s photo.
  fileprivate static func openThenFailUnderOneName(
    _ good: ScriptedPhotoFile, _ bad: ScriptedPhotoFile
  ) async throws -> (Photo?, Photo) {
    let cache = PhotoCache()
    let kept = PhotoViewerModel(cache: cache)
    try await kept.open(good, named: "harbour")
    var failed: PhotoViewerModel? = PhotoViewerModel(cache: cache)
    _ = try? await failed?.open(bad, named: "harbour")
    failed = nil
    // A release from the failed viewer's deinit, run in place or soon after.
    _ = await onMainActorEventually(within: .milliseconds(300)) {
      cache.photo(named: "harbour") == nil
    }
    withExtendedLifetime(kept) {}
    return (cache.photo(named: "harbour"), good.expected)
  }

  /// Opens `file`, lets the viewer go on the main actor, and says whether the photo was
  /// stored, out of the cache right after, and out of it within two seconds.
  fileprivate static func openAndClose(
    _ file: ScriptedPhotoFile
  ) async throws
    -> (stored: Bool, goneAtOnce: Bool, goneSoon: Bool)
  {
    let cache = PhotoCache()
    var model: PhotoViewerModel? = PhotoViewerModel(cache: cache)
    try await model?.open(file, named: "lighthouse")
    let stored = cache.photo(named: "lighthouse") != nil
    model = nil
    let goneAtOnce = cache.photo(named: "lighthouse") == nil
    let goneSoon = await onMainActorEventually { cache.photo(named: "lighthouse") == nil }
    return (stored, goneAtOnce, goneSoon)
  }

  /// Opens `file`, lets the viewer go on another thread, and says how that went and whether
  /// the photo was out of the cache within two seconds.
  fileprivate static func openAndLetGoElsewhere(
    _ file: ScriptedPhotoFile
  ) async throws
    -> (drop: DropOutcome, goneSoon: Bool)
  {
    let cache = PhotoCache()
    var model: PhotoViewerModel? = PhotoViewerModel(cache: cache)
    try await model?.open(file, named: "quay")
    let drop = dropOnAnotherThread(&model) { cache.photo(named: "quay") == nil }
    let goneSoon = await onMainActorEventually { cache.photo(named: "quay") == nil }
    return (drop, goneSoon)
  }
}

// MARK: - Helpers

/// The trace a screen sets around its work, for the app's I/O log: a task-local value.
private enum ViewerTrace {
  @TaskLocal static var screen: String?
}

/// What the screen shows once `open(_:named:)` has returned or thrown.
private struct ViewerState: Sendable {
  var shown: Photo?
  var isLoading: Bool
  var stored: Photo?

  @MainActor init(_ model: PhotoViewerModel, cache: PhotoCache, name: String) {
    shown = model.photo
    isLoading = model.isLoading
    stored = cache.photo(named: name)
  }
}

/// What a ``ScriptedPhotoFile`` throws when a read fails: the disk's own error.
private struct DiskFailure: Error, Equatable {
  let row: Int
}

/// A photo file of `height` rows of `width` pixels, each row two runs of greys that depend
/// on the row. Before each read returns, `beforeReturning(row)` runs on the reading thread.
/// It records every read, and the `ViewerTrace` each one saw.
private final class ScriptedPhotoFile: PhotoFile {
  let width = 16
  let height: Int
  private let badRow: Int?
  /// The row whose read fails with the file's own error, ``DiskFailure``.
  private let failingRow: Int?
  /// Whether the bad row expands to more pixels than the width, not fewer.
  private let badRowTooLong: Bool
  private let beforeReturning: @Sendable (Int) -> Void
  private let reads = Locked<[String?]>([])
  private let readsUnderWay = Locked((now: 0, most: 0))
  /// The most reads that were under way at the same time.
  var mostReadsAtOnce: Int { readsUnderWay.value.most }

  init(
    height: Int, badRow: Int? = nil, badRowTooLong: Bool = false, failingRow: Int? = nil,
    beforeReturning: @escaping @Sendable (Int) -> Void = { _ in }
  ) {
    self.height = height
    self.badRow = badRow
    self.failingRow = failingRow
    self.badRowTooLong = badRowTooLong
    self.beforeReturning = beforeReturning
  }

  func readRow() throws -> [UInt8] {
    let trace = ViewerTrace.screen
    let row = reads.withLock { reads in
      reads.append(trace)
      return reads.count - 1
    }
    readsUnderWay.withLock {
      $0.now += 1
      $0.most = max($0.most, $0.now)
    }
    defer { readsUnderWay.withLock { $0.now -= 1 } }
    beforeReturning(row)
    if row == failingRow { throw DiskFailure(row: row) }
    if row == badRow { return badRowTooLong ? [UInt8(width), 0, 1, 0] : [3, 0] }
    return [UInt8(width / 2), grey(row), UInt8(width - width / 2), grey(row) &+ 100]
  }

  private func grey(_ row: Int) -> UInt8 { UInt8(row % 100) }

  /// How many rows have been read.
  var rowsRead: Int { reads.value.count }

  /// The trace each read saw, in order.
  var traces: [String?] { reads.value }

  /// The photo in this file.
  @MainActor var expected: Photo {
    let pixels = (0..<height).flatMap { row in
      Array(repeating: grey(row), count: width / 2)
        + Array(repeating: grey(row) &+ 100, count: width - width / 2)
    }
    return Photo(width: width, height: height, pixels: pixels)
  }
}

/// Ticks about every half millisecond while the main actor is free, as a screen's spinner
/// needs the main actor to turn.
///
/// It ticks on the main queue, the main actor's executor: a job that holds the main actor
/// holds it too. Not a main-actor task that sleeps or yields: on Linux those resume through
/// a thread of the concurrency pool (measured), which the decode's slow reads may be holding,
/// and the heartbeat would stop for a reason that is not the answer's.
private final class Heartbeat: Sendable {
  private let ticks: Locked<Int>
  private let stopped = Locked(false)

  init(ticks: Locked<Int>) {
    self.ticks = ticks
    tick()
  }

  private func tick() {
    DispatchQueue.main.asyncAfter(deadline: .now() + .microseconds(500)) { [self] in
      guard !stopped.value else { return }
      ticks.withLock { $0 += 1 }
      tick()
    }
  }

  func stop() { stopped.withLock { $0 = true } }
}

/// Makes each read of a file wait for a heartbeat tick since the read before it, giving up
/// after two seconds without one (of time this thread could run) and then waiting no more.
private final class HeartbeatPacing: Sendable {
  private struct State {
    var lastSeen: Int?
    var rowsThatSawATick = 0
    var gaveUp = false
  }

  private let ticks: Locked<Int>
  private let state = Locked(State())

  init(ticks: Locked<Int>) { self.ticks = ticks }

  /// How many reads saw a tick since the read before them (the first: since it began).
  var rowsThatSawATick: Int { state.value.rowsThatSawATick }

  /// Called by each read, on the reading thread.
  func waitForATick() {
    let current = state.value
    guard !current.gaveUp else { return }
    let since = current.lastSeen ?? ticks.value
    let clock = ContinuousClock()
    var waited = Duration.zero
    while ticks.value == since, waited < .seconds(2) {
      let before = clock.now
      Thread.sleep(forTimeInterval: 0.000_2)
      waited += min(clock.now - before, .milliseconds(10))
    }
    let now = ticks.value
    state.withLock { state in
      state.lastSeen = now
      if now != since {
        state.rowsThatSawATick += 1
      } else {
        state.gaveUp = true
      }
    }
  }
}

/// Holds the main actor from a job of its own, started from another thread, until a
/// condition holds or the time is up, and says how it ended.
private final class MainActorWait: Sendable {
  private let state = Locked((started: false, met: false, seen: 0))
  private let rows: @Sendable () -> Int

  private init(rows: @escaping @Sendable () -> Int) { self.rows = rows }

  /// Whether the hold began (it cannot while the caller itself holds the main actor).
  var started: Bool { state.value.started }
  /// Whether the condition held before the time was up.
  var conditionMet: Bool { state.value.met }
  /// What `rows` said when the hold ended.
  var seenWhenItEnded: Int { state.value.seen }

  /// Starts a hold on the main queue (the main actor's executor) that lasts until
  /// `condition` holds or `limit` has passed; waits up to a second for it to begin.
  static func holdUntil(
    atMost limit: Duration, rows: @escaping @Sendable () -> Int = { 0 },
    _ condition: @escaping @Sendable () -> Bool
  ) -> MainActorWait {
    let wait = MainActorWait(rows: rows)
    let started = DispatchSemaphore(value: 0)
    DispatchQueue.main.async {
      wait.state.withLock { $0.started = true }
      started.signal()
      // Blocks the main actor on purpose: nothing else can run there meanwhile.
      let start = ContinuousClock.now
      while !condition(), ContinuousClock.now - start < limit { usleep(1_000) }
      let met = condition()
      let seen = wait.rows()
      wait.state.withLock {
        $0.met = met
        $0.seen = seen
      }
    }
    if started.wait(timeout: .now() + 1) == .timedOut {
      // The hold will still run once the main actor is free, and end at once or soon.
      wait.state.withLock { $0.started = false }
    }
    return wait
  }
}

/// Holds the main actor from a job of its own, started from another thread, until a change
/// is noted or the time is up.
private final class MainActorHold: Sendable {
  private let started = DispatchSemaphore(value: 0)
  private let release = DispatchSemaphore(value: 0)
  private let state = Locked((held: false, changedWhileHeld: false))

  /// Whether a change was noted while the main actor was held.
  var changedWhileHeld: Bool { state.value.changedWhileHeld }

  /// Starts the hold and waits, up to a second, for it to begin; says whether it did.
  func holdFromElsewhere(atMost limit: Duration) -> Bool {
    // On the main queue, the main actor's executor (see `Heartbeat`).
    DispatchQueue.main.async { [self] in
      state.withLock { $0.held = true }
      started.signal()
      // Blocks the main actor on purpose: nothing else can run there meanwhile.
      _ = release.wait(timeout: .now() + limit.timeInterval)
      state.withLock { $0.held = false }
    }
    return started.wait(timeout: .now() + 1) == .success
  }

  /// A change of the observed state, on whatever thread made it.
  func noteChange() {
    let wasHeld = state.withLock { state in
      if state.held { state.changedWhileHeld = true }
      return state.held
    }
    if wasHeld { release.signal() }
  }
}

/// Reads a viewer's spinner on the main actor, from the thread that decodes.
private final class SpinnerProbe: Sendable {
  private struct State {
    var read: (@MainActor @Sendable () -> Bool)?
    var seen: Bool?
    var gaveUp = false
  }

  private let state = Locked(State())

  /// What the spinner showed when it was read, if it could be read in time.
  var seen: Bool? { state.value.seen }

  /// Lets the probe read `model`'s spinner with `read`, from any thread: a main-actor model
  /// is Sendable, so a main-actor closure may hold it.
  func watch<Model: AnyObject & Sendable>(
    _ model: Model, _ read: @escaping @MainActor @Sendable (Model) -> Bool
  ) {
    state.withLock { $0.read = { read(model) } }
  }

  /// A model that is not Sendable cannot be held off the main actor: no reading then.
  func watch<Model: AnyObject>(
    _ model: Model, _ read: @escaping @MainActor @Sendable (Model) -> Bool
  ) {}

  /// Called on the decoding thread: reads the spinner on the main actor, waiting up to a
  /// second for it (a decode that holds the main actor never lets the read run in time).
  func readOnTheMainActor() {
    guard let read = state.value.read else { return }
    let done = DispatchSemaphore(value: 0)
    Task { @MainActor in
      let value = read()
      state.withLock { if !$0.gaveUp { $0.seen = value } }
      done.signal()
    }
    if done.wait(timeout: .now() + 1) == .timedOut {
      state.withLock { $0.gaveUp = true }
    }
  }
}

/// How the last reference to a model went away on another thread.
private enum DropOutcome: Sendable {
  /// It went; `goneWhileHeld`: the cleanup had happened by then, off the main actor.
  case dropped(goneWhileHeld: Bool)
  /// The model is not Sendable: no other thread can hold it.
  case notSendable
  /// The thread did not finish in time.
  case threadStuck
}

/// Hands `model`, its only reference, to a thread of its own, which lets it go while this
/// function holds the main actor (it waits without suspending). Then says whether `gone`
/// was already true: whether the cleanup ran off the main actor.
@MainActor
private func dropOnAnotherThread<Model: AnyObject & Sendable>(
  _ model: inout Model?, gone: () -> Bool
) -> DropOutcome {
  let box = Locked<Model?>(model)
  model = nil
  let done = DispatchSemaphore(value: 0)
  Thread {
    box.withLock { $0 = nil }
    done.signal()
  }.start()
  guard done.wait(timeout: .now() + 1) == .success else { return .threadStuck }
  return .dropped(goneWhileHeld: gone())
}

/// The same for a model that is not Sendable, which no other thread can hold.
@MainActor
private func dropOnAnotherThread<Model: AnyObject>(
  _ model: inout Model?, gone: () -> Bool
) -> DropOutcome {
  .notSendable
}

/// Waits on the main actor, suspending, until `condition` holds or two seconds have passed.
@MainActor
private func onMainActorEventually(
  within limit: Duration = .seconds(2), _ condition: () -> Bool
) async -> Bool {
  let clock = ContinuousClock()
  let end = clock.now + limit
  while !condition() {
    guard clock.now < end else { return false }
    try? await Task.sleep(for: .milliseconds(5))
  }
  return true
}
