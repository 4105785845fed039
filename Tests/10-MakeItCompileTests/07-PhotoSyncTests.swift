import Dispatch
import Foundation
import LegacyKit
import Synchronization
import Testing
import WorkbookTesting

@testable import MakeItCompile

/// The contract of the photo-sync module: each path, what its callers see, and the test
/// that checks it (— where a column does not apply, and why). The compile check (Swift 6
/// mode, no warning, no escape hatch) is the runner's; these tests check that the migration
/// kept the module working, its screen's state on the main thread, and every shared thing
/// safe to share. Every test that syncs also checks, first, that no photo was uploaded on the
/// main thread (the main queue, where the main actor runs).
///
/// | path | what the server gets | the screen (waiting, progress, status) | counts and conflicts | thread, order, concurrency |
/// | --- | --- | --- | --- | --- |
/// | photos reported, then "Sync now" | each once, in the order reported: `syncUploadsTheWaitingPhotos` | none waiting, bar full, "4 uploaded, 0 up to date, 0 in conflict": `syncUploadsTheWaitingPhotos` | counted by the time syncNow returns, read on another thread: `syncUploadsTheWaitingPhotos` | uploads off the main thread: every test |
/// | a second sync: a revision the server has, a new revision, a photo newer on the server | only the new revisions: `secondSyncKnowsWhatTheServerHas` | "1 uploaded, 1 up to date, 1 in conflict"; the bar full, a step for every photo, not only uploads: `secondSyncKnowsWhatTheServerHas` | the conflict kept by the time syncNow returns, read on another thread; only stored photos counted: `secondSyncKnowsWhatTheServerHas` | — |
/// | a third sync: the photo newer on the server again, after the user settled it | nothing (the engine remembers the server's answer): `secondSyncKnowsWhatTheServerHas` | "0 uploaded, 1 up to date, 1 in conflict": `secondSyncKnowsWhatTheServerHas` | the conflict kept again: `secondSyncKnowsWhatTheServerHas` | — |
/// | progress of a 40-photo sync | — | each step on the main thread before the engine starts the next upload, in order; full when syncNow returns: `progressKeepsUpWithTheUpload` | each upload counted before the next starts: `progressKeepsUpWithTheUpload` | the screen read on the main queue at each upload |
/// | the library reports changes | — | listed on the main thread only, unchanged while the main thread is busy: `libraryChangesReachTheMainThreadOnly`; 30 changes listed in order: `libraryChangesReachTheMainThreadOnly` | — | the observer called on the library's change queue; the queue does not wait for the main thread: `libraryChangesReachTheMainThreadOnly` |
/// | photos reported while a sync runs (a new photo, a new revision of one being synced) | — | still waiting afterwards: `photosReportedDuringASyncStayWaiting` | — | — |
/// | the sync's task cancelled before it starts | nothing: `cancelledBeforeItStarts` | every photo still waiting: `cancelledBeforeItStarts` | — | — |
/// | two screens syncing on one engine at once | one sync's photos, then the other's, never mixed: `twoSyncsDoNotInterleave` | — | — | the engine's sync never suspends |
/// | one Task { @MainActor } per progress step or per library change | — allowed (catalogued as an alternative): each is queued on the main actor at once, and the main actor runs them in the order they were queued | | | |
/// | a second "Sync now" while a sync runs, returning at once (an isSyncing guard) | — allowed: syncNow promises nothing about a second call while one runs | | | |
/// | the sync's task cancelled during its second upload | no photo after the second: `cancellingStopsTheSync` | the photos not reached stay waiting; "2 uploaded"; the bar at 2 of 6, not filled up: `cancellingStopsTheSync` | — | syncNow returns: `cancellingStopsTheSync` |
/// | a sync after the cancelled one, with its two uploaded photos reported again | only the photos it did not reach (the engine remembers what it uploaded before the cancel): `cancellingStopsTheSync` | none waiting; "4 uploaded, 2 up to date": `cancellingStopsTheSync` | — | — |
/// | a photo reported at two revisions | — | listed at each, in order: `twoRevisionsAndAnEmptySync` | — | — |
/// | "Sync now" with nothing waiting | nothing | "0 uploaded, 0 up to date, 0 in conflict", the bar at 0 of 0: `twoRevisionsAndAnEmptySync` | — | — |
/// | 8 screens syncing overlapping photos on one engine at once | each revision once, never two uploads at once: `manySyncsOnOneEngine` | every screen done, its status adding up: `manySyncsOnOneEngine` | — | the engine's syncs one at a time |
/// | countUploadedPhoto() from 8 threads at once | — | — | every count made, none lost, none late: `countsFromManyThreads` | any thread, synchronously |
/// | conflicts kept and settled from 8 threads at once | — | — | every conflict kept, listed by photo ID; each settled by one caller, once: `conflictsAreSettledOnce`; a newer conflict replaces the older: `conflictsAreSettledOnce` | any thread, synchronously |
/// | the same under Thread Sanitizer | — | — | — | no data race: every test (`make tsan`) |
/// | the screen released while the library reports | — the library holds its observers weakly, and the screen promises nothing then | | | |
@MainActor
@Suite("10.7 Migrate a module to Swift 6", .serialized)
struct PhotoSyncTests {
  @Test("Sync now uploads the waiting photos in order, counts them, and empties the list")
  func syncUploadsTheWaitingPhotos() async throws {
    let rig = PhotoSyncRig()
    let photos = photoSyncPhotos("beach", count: 4)
    #expect(rig.model.status == "Not synced yet")
    guard await rig.report(Array(photos[0..<2])), await rig.report(Array(photos[2...])) else {
      return
    }
    let before = photosUploadedSinceLaunch

    try await rig.syncNow()
    let counted = await onAnotherThread { photosUploadedSinceLaunch } - before
    guard rig.uploadedOffTheMainThread() else { return }

    let uploaded = rig.server.uploads.map(\.photo)
    #expect(
      uploaded == photos,
      Comment(
        rawValue: "the server got \(uploaded), not \(photos): syncNow() must upload each "
          + "waiting photo once, in the order the library reported them"))
    #expect(
      rig.model.waiting.isEmpty,
      Comment(
        rawValue: "after the sync, the screen still listed \(rig.model.waiting) as waiting: "
          + "the photos the sync got through leave the list. syncNow() must read what became "
          + "of them from the engine's answer to this sync: reading the outcomes from a copy of "
          + "the batch, or from a batch the engine no longer writes to, finds none"))
    #expect(
      rig.model.status == "4 uploaded, 0 up to date, 0 in conflict",
      Comment(
        rawValue: "the status line said \"\(rig.model.status)\" after 4 photos were uploaded: "
          + photoSyncStatusHint))
    #expect(
      rig.model.progress == PhotoSyncProgress(done: 4, total: 4),
      Comment(
        rawValue: "the progress bar showed \(rig.model.progress.done) of "
          + "\(rig.model.progress.total) when syncNow() returned, not 4 of 4: "
          + photoSyncProgressHint))
    #expect(
      counted == 4,
      Comment(
        rawValue: "photosUploadedSinceLaunch grew by \(counted), not 4, by the time syncNow() "
          + "had returned (read on another thread): " + photoSyncCountHint))
  }

  @Test("A second sync leaves out what the server has, and keeps a conflict for the user")
  func secondSyncKnowsWhatTheServerHas() async throws {
    let tag = UUID().uuidString.prefix(8)
    let kept = LibraryPhoto(id: "kept-\(tag)", revision: 1)
    let edited = LibraryPhoto(id: "edited-\(tag)", revision: 1)
    let clash = LibraryPhoto(id: "clash-\(tag)", revision: 1)
    // The server has revision 5 of `clash`, edited on another device.
    let rig = PhotoSyncRig(server: PhotoSyncTestServer(revisions: [clash.id: 5]))
    guard await rig.report([kept, edited]) else { return }
    try await rig.syncNow()
    let edit = LibraryPhoto(id: edited.id, revision: 2)
    guard await rig.report([kept, edit, clash]) else { return }
    let before = photosUploadedSinceLaunch

    try await rig.syncNow()
    guard rig.uploadedOffTheMainThread() else { return }
    let (counted, pending) = await onAnotherThread {
      (
        photosUploadedSinceLaunch,
        PhotoConflictStore.shared.pending.filter { $0.photoID.hasSuffix(tag) }
      )
    }

    let uploaded = rig.server.uploads.map(\.photo)
    #expect(
      uploaded == [kept, edited, edit, clash],
      Comment(
        rawValue: "the server got \(uploaded), not \([kept, edited, edit, clash]): the "
          + "engine uploads a revision once, and leaves out a revision the server has"))
    #expect(
      rig.model.status == "1 uploaded, 1 up to date, 1 in conflict",
      Comment(
        rawValue: "the status line said \"\(rig.model.status)\" after a sync of a photo the "
          + "server had, a new revision, and a photo newer on the server: " + photoSyncStatusHint))
    #expect(
      pending == [PhotoSyncConflict(photoID: clash.id, localRevision: 1, serverRevision: 5)],
      Comment(
        rawValue: "the conflict store held \(pending) for this test's photos once syncNow() had "
          + "returned (read on another thread), not the conflict of \(clash.id): the engine "
          + "keeps each conflict in the shared store, and a conflict kept is there for a read "
          + "made after keep(_:) returned"))
    #expect(
      counted - before == 1,
      Comment(
        rawValue: "photosUploadedSinceLaunch grew by \(counted - before), not 1, in a sync that "
          + "uploaded one photo: only a photo the server stored counts"))
    #expect(rig.model.waiting.isEmpty, "every photo of the sync should have left the list")
    Self.expectFullBar(rig.model.progress, photos: 3, "a photo the server had and a conflict")

    // The user settles the conflict; the same revision of `clash` comes up again, and the
    // engine knows by now that the server has a newer one: a conflict again, not an upload.
    _ = PhotoConflictStore.shared.settle(clash.id)
    guard await rig.report([clash, kept]) else { return }
    try await rig.syncNow()

    let again = Array(rig.server.uploads.dropFirst(uploaded.count).map(\.photo))
    #expect(
      again.isEmpty,
      Comment(
        rawValue: "a third sync of \(clash) (the server had revision 5 of it, as its last answer "
          + "said) and of \(kept) (up to date) uploaded \(again): the engine remembers the "
          + "revision the server has, from its answers too, and uploads neither"))
    #expect(
      rig.model.status == "0 uploaded, 1 up to date, 1 in conflict",
      Comment(
        rawValue: "the status line said \"\(rig.model.status)\" after a sync of a photo the "
          + "server had and a photo the server has a newer revision of: " + photoSyncStatusHint))
    let keptAgain = await onAnotherThread {
      PhotoConflictStore.shared.pending.filter { $0.photoID.hasSuffix(tag) }
    }
    #expect(
      keptAgain == [PhotoSyncConflict(photoID: clash.id, localRevision: 1, serverRevision: 5)],
      Comment(
        rawValue: "the conflict store held \(keptAgain) for this test's photos after the third "
          + "sync, not the conflict of \(clash.id): a photo the server has a newer revision of "
          + "is a conflict each time it is synced, kept in the store"))
    #expect(rig.model.waiting.isEmpty, "every photo of the sync should have left the list")
    Self.expectFullBar(rig.model.progress, photos: 2, "a conflict, then a photo the server had")
  }

  /// Records an issue unless `progress` is the full bar of a sync of `photos` photos that
  /// ended normally; `which` says what the sync held besides uploads.
  static func expectFullBar(
    _ progress: PhotoSyncProgress, photos: Int, _ which: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(
      progress == PhotoSyncProgress(done: photos, total: photos),
      Comment(
        rawValue: "the progress bar showed \(progress.done) of \(progress.total) after a sync "
          + "of \(photos) photos with \(which), not \(photos) of \(photos): the engine calls the "
          + "progress closure after each photo, whatever became of it (uploaded, up to date, "
          + "in conflict), not only after an upload"),
      sourceLocation: sourceLocation)
  }

  @Test("The progress bar moves on the main thread, in step with the upload")
  func progressKeepsUpWithTheUpload() async throws {
    let screen = Locked<PhotoSyncScreenModel?>(nil)
    let shown = Locked<[PhotoSyncProgress]>([])
    let counted = Locked<[Int]>([])
    let before = photosUploadedSinceLaunch
    // At each upload the server looks at the screen's progress bar, on the main queue: what
    // the main thread shows once everything queued there before has run. It also reads the
    // count of uploads, which has grown by every photo uploaded before this one.
    let server = PhotoSyncTestServer { _, _ in
      counted.withLock { $0.append(photosUploadedSinceLaunch - before) }
      guard !photoSyncOnTheMainQueue(), let model = screen.value else { return }
      let progress = DispatchQueue.main.sync { MainActor.assumeIsolated { model.progress } }
      shown.withLock { $0.append(progress) }
    }
    let rig = PhotoSyncRig(server: server)
    screen.withLock { $0 = rig.model }
    let photos = photoSyncPhotos("snow", count: 40)
    guard await rig.report(photos) else { return }

    try await rig.syncNow()
    guard rig.uploadedOffTheMainThread() else { return }

    let seen = shown.value
    if seen.count == photos.count {
      for (index, progress) in seen.enumerated()
      where progress != PhotoSyncProgress(done: index, total: photos.count) {
        Issue.record(
          Comment(
            rawValue: "when the engine started uploading photo \(index + 1) of "
              + "\(photos.count), the main thread showed the progress bar at "
              + "\(progress.done) of \(progress.total), not \(index) of \(photos.count): "
              + (progress.total != photos.count
                ? "syncNow() must set the bar's total to the number of photos first"
                : progress.done < index
                  ? "the bar lagged behind. " + photoSyncProgressHint
                  : "the bar was ahead of the upload, or out of order. "
                    + photoSyncProgressHint)))
        break
      }
    }
    #expect(
      rig.model.progress == PhotoSyncProgress(done: photos.count, total: photos.count),
      Comment(
        rawValue: "the progress bar showed \(rig.model.progress.done) of "
          + "\(rig.model.progress.total) when syncNow() returned, not \(photos.count) of "
          + "\(photos.count): " + photoSyncProgressHint))
    if let late = counted.value.enumerated().first(where: { $0.element < $0.offset }) {
      Issue.record(
        Comment(
          rawValue: "when the engine started uploading photo \(late.offset + 1), "
            + "photosUploadedSinceLaunch had grown by \(late.element), not by the "
            + "\(late.offset) photos uploaded before it: the engine counts each upload with "
            + "countUploadedPhoto() as it happens, not once the sync is over. "
            + photoSyncCountHint))
    }
  }

  @Test("Library changes are listed on the main thread only, in the order reported")
  func libraryChangesReachTheMainThreadOnly() async throws {
    let rig = PhotoSyncRig()
    let first = photoSyncPhotos("held", count: 1)

    // From here to the look, this test holds the main thread: it does not suspend. The
    // library reports the change on its change queue meanwhile. A busy machine may be slow to
    // run that queue, so the test waits for the observer to be called (10 seconds at most),
    // then gives it a second to return, so nothing hangs.
    let reported = DispatchSemaphore(value: 0)
    rig.library.photosChanged(first)
    rig.library.whenReported { reported.signal() }
    let calledBy = ContinuousClock.now + .seconds(10)
    while rig.library.observersInside == 0, rig.library.changesReported == 0,
      ContinuousClock.now < calledBy
    {
      usleep(1_000)
    }
    let returned = reported.wait(timeout: .now() + 1) == .success
    let waitingWhileHeld = rig.model.waiting

    #expect(
      returned,
      """
      the library's change queue was still inside photoLibraryDidChange(_:) a second after \
      the change came, while the main thread was busy: the method waited for the main thread \
      (DispatchQueue.main.sync, or another wait). The library waits while its observers run; \
      hand the photos over to the main thread and return at once.
      """)
    if returned {
      #expect(
        waitingWhileHeld.isEmpty,
        """
        the waiting list changed on the library's change queue: while the main thread was \
        busy elsewhere, photoLibraryDidChange(_:) listed \(waitingWhileHeld) itself, on the \
        background queue the library calls it on. The screen's state belongs to the main \
        actor: changed from another thread, it races with the view reading it. The method \
        must not be isolated to the main actor (by its conformance or otherwise), and the \
        state must stay there: read the photos out of the change and hand them over.
        """)
    }
    guard await rig.expectWaiting(first, "after the main thread was free again") else { return }

    // 30 changes of 10 photos each, reported back to back: listed in order.
    let more = photoSyncPhotos("burst", count: 300)
    for start in stride(from: 0, to: more.count, by: 10) {
      rig.library.photosChanged(Array(more[start..<start + 10]))
    }
    await rig.expectWaiting(first + more, "after 30 changes of 10 photos")
  }

  @Test("Photos reported while a sync runs are still waiting when it is over")
  func photosReportedDuringASyncStayWaiting() async throws {
    let library = Locked<PhotoLibrary?>(nil)
    let photos = photoSyncPhotos("lake", count: 3)
    let newPhoto = LibraryPhoto(id: "lake-new-\(UUID())", revision: 1)
    let newRevision = LibraryPhoto(id: photos[0].id, revision: 2)
    // During the second upload the library reports a new photo, and a new revision of the
    // first one (already uploaded); the server answers once the change has been reported.
    let server = PhotoSyncTestServer { number, _ in
      guard number == 2, let library = library.value else { return }
      library.photosChanged([newPhoto, newRevision])
      _ = waitOnThisThread(upTo: .seconds(2)) { library.changesReported >= 2 }
    }
    let rig = PhotoSyncRig(server: server)
    library.withLock { $0 = rig.library }
    guard await rig.report(photos) else { return }

    try await rig.syncNow(checksPool: false)
    guard rig.uploadedOffTheMainThread() else { return }

    #expect(
      rig.model.waiting == [newPhoto, newRevision],
      Comment(
        rawValue: "after a sync during which the library reported \([newPhoto, newRevision]), "
          + "the screen listed \(rig.model.waiting) as waiting: only the photos the sync got "
          + "through leave the list (the same photo at the same revision), and the photos "
          + "reported meanwhile stay for the next sync"))
    #expect(
      rig.model.status == "3 uploaded, 0 up to date, 0 in conflict",
      Comment(rawValue: "the status line said \"\(rig.model.status)\": " + photoSyncStatusHint))
  }

  @Test("Cancelling the sync's task stops it before its next photo")
  func cancellingStopsTheSync() async throws {
    let handle = Locked<Task<Void, Never>?>(nil)
    // The user leaves the screen during the second upload: the sync's task is cancelled.
    let server = PhotoSyncTestServer { number, _ in
      if number == 2 { handle.value?.cancel() }
    }
    let rig = PhotoSyncRig(server: server)
    let photos = photoSyncPhotos("dune", count: 6)
    guard await rig.report(photos) else { return }

    let model = rig.model
    let task = Task { await model.syncNow() }
    // The task runs on the main actor, as this test does: it starts once the test awaits.
    handle.withLock { $0 = task }
    try await withDeadline(
      .seconds(2), "syncNow()",
      hint: "a sync cancelled during an upload should still return, its later photos skipped"
    ) { await task.value }
    guard rig.uploadedOffTheMainThread() else { return }

    let uploaded = rig.server.uploads.map(\.photo)
    #expect(
      uploaded == Array(photos.prefix(2)),
      Comment(
        rawValue: "the sync's task was cancelled during the second upload, and the server got "
          + "\(uploaded.count) photos, not 2"
          + (uploaded.count > 2
            ? ": the sync kept uploading after its task was cancelled. The engine checks "
              + "whether the task that runs it was cancelled, so the engine must run in the "
              + "task of syncNow(), awaited there: a Task.detached (or any new Task) runs on "
              + "its own, and cancelling syncNow()'s task never reaches it"
            : "")))
    #expect(
      rig.model.waiting == Array(photos.dropFirst(uploaded.count)),
      Comment(
        rawValue: "after the cancelled sync the screen listed \(rig.model.waiting) as waiting: "
          + "the photos the sync did not reach stay waiting"))
    #expect(
      rig.model.status == "2 uploaded, 0 up to date, 0 in conflict",
      Comment(rawValue: "the status line said \"\(rig.model.status)\": " + photoSyncStatusHint))
    #expect(
      rig.model.progress == PhotoSyncProgress(done: uploaded.count, total: photos.count),
      Comment(
        rawValue: "after a sync cancelled once \(uploaded.count) of \(photos.count) photos were "
          + "done, the progress bar showed \(rig.model.progress.done) of "
          + "\(rig.model.progress.total): it stops at the photos done, and is not filled up"))

    // The library reports the two uploaded photos again, unchanged, and the user syncs
    // again: the engine remembers the revisions it uploaded before the cancel, and uploads
    // only the photos the cancelled sync did not reach.
    guard await rig.report(Array(photos.prefix(2))) else { return }
    try await rig.syncNow()
    let all = rig.server.uploads.map(\.photo)
    #expect(
      all == photos,
      Comment(
        rawValue: "a sync after the cancelled one, of the photos it did not reach and of the "
          + "two it had uploaded (reported again, unchanged), got the server "
          + "\(Array(all.dropFirst(uploaded.count))), not only the \(photos.count - 2) photos "
          + "it had not reached: the engine remembers each revision the server has as soon as "
          + "it is uploaded, also when the sync is cancelled later, and uploads a revision once"))
    #expect(
      rig.model.status == "4 uploaded, 2 up to date, 0 in conflict",
      Comment(
        rawValue: "the status line said \"\(rig.model.status)\" after a sync of 4 new photos and "
          + "2 the server had from the cancelled sync: " + photoSyncStatusHint))
    #expect(
      rig.model.waiting.isEmpty, "every photo should have left the list after the second sync")
  }

  @Test("A photo edited twice is listed at each revision, and a sync of nothing says so")
  func twoRevisionsAndAnEmptySync() async throws {
    let rig = PhotoSyncRig()
    let tag = UUID().uuidString.prefix(8)
    let first = LibraryPhoto(id: "pier-\(tag)", revision: 1)
    let other = LibraryPhoto(id: "gull-\(tag)", revision: 1)
    let second = LibraryPhoto(id: first.id, revision: 2)
    rig.library.photosChanged([first, other])
    rig.library.photosChanged([second])
    guard
      await rig.expectWaiting(
        [first, other, second],
        "after the library reported a photo, another, then a second revision of the first "
          + "(each revision is listed: the doc comment of waiting says so)")
    else { return }
    try await rig.syncNow()
    #expect(rig.model.waiting.isEmpty, "every photo of the sync should have left the list")

    // "Sync now" with nothing waiting: a sync of no photos, and the screen says so.
    try await rig.syncNow()
    #expect(
      rig.model.status == "0 uploaded, 0 up to date, 0 in conflict",
      Comment(
        rawValue:
          "after a sync with nothing waiting, the status line said \"\(rig.model.status)\": "
          + "it says what the last sync did, and a sync of no photos did nothing"))
    #expect(
      rig.model.progress == PhotoSyncProgress(done: 0, total: 0),
      Comment(
        rawValue: "after a sync with nothing waiting, the progress bar showed "
          + "\(rig.model.progress.done) of \(rig.model.progress.total), not 0 of 0: it is the "
          + "bar of the last sync"))
  }

  @Test("A sync whose task is cancelled before it starts uploads nothing")
  func cancelledBeforeItStarts() async throws {
    let rig = PhotoSyncRig()
    let photos = photoSyncPhotos("fjord", count: 3)
    guard await rig.report(photos) else { return }

    let model = rig.model
    // The task runs on the main actor, as this test does: it cannot start before the test
    // awaits, so it is cancelled before its first photo.
    let task = Task { await model.syncNow() }
    task.cancel()
    try await withDeadline(
      .seconds(2), "syncNow()", hint: "a sync cancelled before it starts should still return"
    ) { await task.value }

    let uploaded = rig.server.uploads.map(\.photo)
    #expect(
      uploaded.isEmpty,
      Comment(
        rawValue: "the sync's task was cancelled before it started, and the server got "
          + "\(uploaded.count) photos (\(uploaded.prefix(2).map(\.id))): the engine checks for "
          + "cancellation before each photo, the first one too, and stops there"))
    #expect(
      rig.model.waiting == photos,
      Comment(
        rawValue: "after a sync cancelled before it started, the screen listed "
          + "\(rig.model.waiting) as waiting: the photos the sync did not reach stay waiting"))
  }

  @Test("Two screens syncing on one engine at once: one sync after the other, never mixed")
  func twoSyncsDoNotInterleave() async throws {
    let server = PhotoSyncTestServer()
    let engine = PhotoSyncEngine(server: server)
    let left = PhotoSyncRig(server: server, engine: engine)
    let right = PhotoSyncRig(server: server, engine: engine)
    let leftPhotos = photoSyncPhotos("left", count: 6)
    let rightPhotos = photoSyncPhotos("right", count: 6)
    guard await left.report(leftPhotos), await right.report(rightPhotos) else { return }

    let (leftModel, rightModel) = (left.model, right.model)
    try await withDeadline(.seconds(10), "2 syncNow() at once", checksPool: false) {
      await withTaskGroup(of: Void.self) { group in
        group.addTask { await leftModel.syncNow() }
        group.addTask { await rightModel.syncNow() }
      }
    }

    let order = server.uploads.map(\.photo)
    let leftFirst = order.first.map(leftPhotos.contains) ?? true
    let expected = leftFirst ? leftPhotos + rightPhotos : rightPhotos + leftPhotos
    #expect(
      order == expected,
      Comment(
        rawValue: "two screens synced 6 photos each on one engine at once, and the server got "
          + "them mixed: \(order.map(\.id)). The engine runs one sync at a time because its "
          + "sync never suspends; an await inside it (of a main-actor progress step, say) lets "
          + "the other sync in at each one. Call the progress synchronously there, and let "
          + "it queue its work on the main thread"))
  }

  @Test("Eight screens syncing overlapping photos on one engine: each revision uploaded once")
  func manySyncsOnOneEngine() async throws {
    for round in 1...stressAmount(grading: 2, verify: 6) {
      // Each upload takes a little while, as a server's does: syncs that overlap meet there.
      let server = PhotoSyncTestServer(takes: .microseconds(200))
      let engine = PhotoSyncEngine(server: server)
      let shared = photoSyncPhotos("shared", count: 30)
      let rigs = (0..<8).map { _ in PhotoSyncRig(server: server, engine: engine) }
      var reported: [[LibraryPhoto]] = []
      for (index, rig) in rigs.enumerated() {
        let own = photoSyncPhotos("own-\(index)", count: 3)
        let photos = Array(shared[(index * 4)...] + shared[..<(index * 4)]) + own
        guard await rig.report(photos) else { return }
        reported.append(photos)
      }

      try await withDeadline(.seconds(10), "8 syncNow() at once", checksPool: false) {
        await withTaskGroup(of: Void.self) { group in
          for rig in rigs {
            let model = rig.model
            group.addTask { await model.syncNow() }
          }
        }
      }

      for rig in rigs { guard rig.uploadedOffTheMainThread() else { return } }
      let uploads = server.uploads
      let distinct = Set(reported.joined())
      var times: [LibraryPhoto: Int] = [:]
      for upload in uploads { times[upload.photo, default: 0] += 1 }
      let twice = times.filter { $0.value > 1 }.keys.sorted { $0.id < $1.id }
      let missing = distinct.filter { times[$0] == nil }
      let overlapped = uploads.filter(\.overlapped).count
      let statusUploaded = rigs.compactMap { photoSyncUploadedCount($0.model.status) }.reduce(0, +)
      let notDone = rigs.filter { !$0.model.waiting.isEmpty }.count
      guard twice.isEmpty, missing.isEmpty, overlapped == 0, notDone == 0 else {
        Issue.record(
          Comment(
            rawValue: "round \(round): 8 screens synced \(distinct.count) different photos on "
              + "one engine at once, "
              + (!twice.isEmpty
                ? "and \(twice.count) were uploaded twice (\(twice.first!)): "
                : !missing.isEmpty
                  ? "and \(missing.count) were never uploaded: "
                  : overlapped > 0
                    ? "and the server got two uploads at once \(overlapped) times: "
                    : "and \(notDone) screens still listed photos as waiting: ")
              + photoSyncEngineHint))
        return
      }
      #expect(
        statusUploaded == distinct.count,
        Comment(
          rawValue: "round \(round): the 8 status lines counted \(statusUploaded) uploads in "
            + "all, and the server got \(distinct.count): " + photoSyncStatusHint))
    }
  }

  @Test("Uploads counted on many threads at once are all counted")
  nonisolated func countsFromManyThreads() async throws {
    try await withOneStressAtATime {
      let before = photosUploadedSinceLaunch
      // Each thread counts for a while rather than a fixed number of times: on a busy
      // machine a short loop runs whole within one time slice and meets no other thread.
      let budget = stressAmount(grading: Duration.milliseconds(300), verify: .seconds(1))
      let counts = Locked(0)
      await onThreads(8) { _ in
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: budget)
        var mine = 0
        while clock.now < end {
          for _ in 0..<100 { countUploadedPhoto() }
          mine += 100
        }
        counts.withLock { $0 += mine }
      }
      let expected = counts.value
      let counted = photosUploadedSinceLaunch - before
      // Too few: lost, or only late? A count made later catches up in a moment.
      let caughtUp =
        counted < expected
        ? await eventually(within: .seconds(1)) {
          photosUploadedSinceLaunch - before >= expected
        }
        : false

      #expect(
        counted == expected,
        Comment(
          rawValue: "8 threads counted \(expected) uploads at the same time with "
            + "countUploadedPhoto(), and photosUploadedSinceLaunch grew by \(counted) by the "
            + "time they had returned: "
            + (counted > expected
              ? "some were counted twice"
              : counted == 0
                ? "it did not grow at all: keep one count that every call adds to and every "
                  + "read reads"
                : caughtUp
                  ? "the rest came later. " + photoSyncCountHint
                  : "counts were lost. Reading the count and writing it back in two steps (two "
                    + "locked sections, a locked get and a locked set, or a load and a store) "
                    + "lets two engines write the same number: make each count one "
                    + "indivisible step")))
    }
  }

  @Test("Conflicts kept and settled on many threads at once: each settled once")
  nonisolated func conflictsAreSettledOnce() async throws {
    let store = PhotoConflictStore.shared
    let tag = UUID().uuidString.prefix(8)
    let replaced = "replaced-\(tag)"
    store.keep(PhotoSyncConflict(photoID: replaced, localRevision: 1, serverRevision: 2))
    store.keep(PhotoSyncConflict(photoID: replaced, localRevision: 1, serverRevision: 3))
    #expect(
      store.settle(replaced)?.serverRevision == 3,
      "a conflict kept again for the same photo should replace the one kept before")
    #expect(store.settle(replaced) == nil, "a settled conflict should leave the store")

    try await withOneStressAtATime {
      for round in 1...stressAmount(grading: 20, verify: 100) {
        let ids = (0..<8).map { thread in
          (0..<100).map { "conflict-\(tag)-\(round)-\(thread)-\($0)" }
        }
        await onThreads(8) { thread in
          for id in ids[thread] {
            store.keep(PhotoSyncConflict(photoID: id, localRevision: 1, serverRevision: 2))
          }
        }
        let prefix = "conflict-\(tag)-\(round)-"
        let pending = store.pending.map(\.photoID).filter { $0.hasPrefix(prefix) }
        let kept = pending.count
        #expect(
          pending == pending.sorted(),
          "pending should list the conflicts by photo ID, in order")
        guard kept == 800 else {
          Issue.record(
            Comment(
              rawValue: "round \(round): 8 threads kept 800 conflicts at the same time, and "
                + "the store held \(kept) of them once they had returned: every keep must "
                + "reach the one shared store, done by the time keep(_:) returns, and two "
                + "keeps at once must not undo each other"))
          return
        }
        // Every thread tries to settle every conflict, all in the same order, at once.
        let all = Array(ids.joined())
        let settled = Locked<[String: Int]>([:])
        await onThreads(8) { _ in
          var mine: [String] = []
          for id in all where store.settle(id) != nil { mine.append(id) }
          settled.withLock { for id in mine { $0[id, default: 0] += 1 } }
        }
        let counts = settled.value
        let twice = counts.filter { $0.value > 1 }.count
        let never = all.filter { counts[$0] == nil }.count
        guard twice == 0, never == 0 else {
          Issue.record(
            Comment(
              rawValue: "round \(round): 8 threads settled the same 800 conflicts at once, and "
                + (twice > 0
                  ? "\(twice) were settled twice: two callers both found the conflict before "
                    + "either removed it. Looking it up and removing it in two steps (two "
                    + "locked sections) lets both in; take it out in one locked step"
                  : "\(never) were never settled by anyone: settle(_:) must hand each "
                    + "conflict to the one caller that takes it out")))
          return
        }
      }
    }
  }
}

// MARK: - Helpers

private let photoSyncStatusHint =
  "the line counts what became of the photos of the sync, as the engine noted it for each "
  + "(\"2 uploaded, 1 up to date, 1 in conflict\"). Reading the outcomes from a copy of the "
  + "batch, or from a batch the engine no longer writes to, finds none: let the engine hand "
  + "them back"

private let photoSyncProgressHint =
  "the engine calls the progress closure after each photo, on the engine, and each step must "
  + "be queued for the main thread right there, before the closure returns (a block on the "
  + "main queue, or a Task isolated to the main actor): a Task that is not isolated to the "
  + "main actor, or one that awaits first, arrives late, and maybe out of order"

private let photoSyncCountHint =
  "an upload must be counted by the time the engine goes on (a count handed to the main "
  + "queue, a Task or an actor arrives later, and a read made meanwhile misses it)"

private let photoSyncEngineHint =
  "the engine syncs one batch at a time, and looks up what the server has and uploads in the "
  + "same step. Keep it an actor whose sync never suspends (no await inside it): an await "
  + "there, or a lock taken for the look-up and again for the store, lets another sync in "
  + "between"

/// A server for the tests: it keeps each photo's newest revision, refuses an older one as
/// `newerOnServer`, and records every upload (its thread, and whether another was inside at
/// the time). `atUpload` runs inside each upload, with its number (1 for the first).
private final class PhotoSyncTestServer: PhotoSyncServer {
  struct Upload: Sendable {
    let photo: LibraryPhoto
    let onMainThread: Bool
    let overlapped: Bool
  }

  private struct State {
    var revisions: [String: Int]
    var uploads: [Upload] = []
    var inside = 0
  }

  private let state: Mutex<State>
  private let delay: Duration?
  private let atUpload: (@Sendable (_ number: Int, _ photo: LibraryPhoto) -> Void)?

  init(
    revisions: [String: Int] = [:], takes delay: Duration? = nil,
    atUpload: (@Sendable (_ number: Int, _ photo: LibraryPhoto) -> Void)? = nil
  ) {
    state = Mutex(State(revisions: revisions))
    self.delay = delay
    self.atUpload = atUpload
  }

  var uploads: [Upload] { state.withLock { $0.uploads } }

  func upload(_ photo: LibraryPhoto) -> PhotoUploadReply {
    let onMainThread = photoSyncOnTheMainQueue()
    let number = state.withLock { state in
      state.inside += 1
      state.uploads.append(
        Upload(photo: photo, onMainThread: onMainThread, overlapped: state.inside > 1))
      return state.uploads.count
    }
    atUpload?(number, photo)
    if let delay { usleep(UInt32(delay.components.attoseconds / 1_000_000_000_000)) }
    return state.withLock { state in
      state.inside -= 1
      if let revision = state.revisions[photo.id], revision > photo.revision {
        return .newerOnServer(revision: revision)
      }
      state.revisions[photo.id] = photo.revision
      return .stored
    }
  }
}

/// A sync screen with its library, engine and server.
@MainActor
private final class PhotoSyncRig {
  let library = PhotoLibrary()
  let server: PhotoSyncTestServer
  let engine: PhotoSyncEngine
  let model: PhotoSyncScreenModel

  init(server: PhotoSyncTestServer = PhotoSyncTestServer(), engine: PhotoSyncEngine? = nil) {
    self.server = server
    self.engine = engine ?? PhotoSyncEngine(server: server)
    model = PhotoSyncScreenModel(engine: self.engine, library: library)
  }

  /// The library reports `photos` as one change; waits until the screen lists them.
  func report(
    _ photos: [LibraryPhoto], sourceLocation: SourceLocation = #_sourceLocation
  ) async -> Bool {
    let expected = model.waiting + photos
    library.photosChanged(photos)
    return await expectWaiting(
      expected, "after the library reported \(photos.count) photos",
      sourceLocation: sourceLocation)
  }

  /// Waits (2 seconds at most) until the screen lists `expected` as waiting.
  @discardableResult
  func expectWaiting(
    _ expected: [LibraryPhoto], _ when: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async -> Bool {
    let model = model
    guard await photoSyncEventually({ model.waiting == expected }) else {
      let waiting = model.waiting
      let reordered = waiting.count == expected.count && Set(waiting) == Set(expected)
      Issue.record(
        Comment(
          rawValue: "\(when), the screen listed \(waiting.count) photos as waiting, not "
            + "\(expected.count)"
            + (reordered
              ? ", in another order than the library reported them: hand each change to the "
                + "main thread right there, inside photoLibraryDidChange(_:), in one block (or "
                + "one Task isolated to the main actor), not through a task that hops later"
              : ": every photo the library reports must be listed, on the main thread, in "
                + "the order reported (read the photos out of the change inside "
                + "photoLibraryDidChange(_:), and hand them to the main thread)")),
        sourceLocation: sourceLocation)
      return false
    }
    return true
  }

  /// Taps "Sync now" and waits (5 seconds at most) for the sync to end.
  func syncNow(
    checksPool: Bool = true, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    let model = model
    try await withDeadline(
      .seconds(5), "syncNow()", checksPool: checksPool, sourceLocation: sourceLocation
    ) { await model.syncNow() }
  }

  /// Records an issue if the server got an upload on the main thread, and says whether all
  /// were off it.
  @discardableResult
  func uploadedOffTheMainThread(sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    let onMain = server.uploads.filter(\.onMainThread).count
    #expect(
      onMain == 0,
      Comment(
        rawValue: "\(onMain) photos were uploaded on the main thread: the server's upload "
          + "blocks until the server answers, and would freeze the app there. The engine "
          + "must stay off the main actor (an actor of its own), however much easier "
          + "@MainActor makes the compiler's errors"),
      sourceLocation: sourceLocation)
    return onMain == 0
  }
}

/// Marks the main queue, where the main actor runs its jobs, so that a fake can tell it is
/// called there. (`Thread.isMainThread` cannot: the main queue may run on another thread.)
private let photoSyncMainQueueKey: DispatchSpecificKey<Bool> = {
  let key = DispatchSpecificKey<Bool>()
  DispatchQueue.main.setSpecific(key: key, value: true)
  return key
}()

/// Whether the caller runs on the main queue, so on the main actor.
private func photoSyncOnTheMainQueue() -> Bool {
  DispatchQueue.getSpecific(key: photoSyncMainQueueKey) == true
}

/// `count` new photos, at revision 1, with IDs no other test uses.
private func photoSyncPhotos(_ name: String, count: Int) -> [LibraryPhoto] {
  let tag = UUID().uuidString.prefix(8)
  return (0..<count).map { LibraryPhoto(id: "\(name)-\(tag)-\($0)", revision: 1) }
}

/// The "N uploaded" of a status line.
private func photoSyncUploadedCount(_ status: String) -> Int? {
  status.split(separator: " ").first.flatMap { Int($0) }
}

/// Waits on the main actor until `condition` holds, looking every 5 ms, for at most `limit` of
/// time in which the tests could run (a look that comes far later than asked counts as
/// 25 ms), and 5 times `limit` of wall-clock time.
@MainActor
private func photoSyncEventually(
  within limit: Duration = .seconds(2), _ condition: () -> Bool
) async -> Bool {
  let clock = ContinuousClock()
  let start = clock.now
  var counted = Duration.zero
  while !condition() {
    guard counted < limit, clock.now - start < limit * 5 else { return false }
    let before = clock.now
    try? await Task.sleep(for: .milliseconds(5))
    counted += min(clock.now - before, .milliseconds(25))
  }
  return true
}
