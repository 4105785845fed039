import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import MakeItCompile

/// The contract of the photo catalog: each path, what callers see, and the test that checks
/// it (— where a column does not apply, and why). The compile check (Swift 6 mode, no
/// warning, no escape hatch but `@preconcurrency import`) is the runner's; these tests check
/// that the fix kept the feature working and the library's `MetadataIndex`, which is not
/// thread-safe, entered by one thread at a time.
///
/// | path | result | the index: one thread at a time | the files: read in parallel | isolation |
/// | --- | --- | --- | --- | --- |
/// | an import of many files | every photo with an EXIF block, in the order of the files, with its metadata; the others left out: `importReturnsEveryPhoto` | `indexOneThreadAtATime` | `readsInParallel` | called from a task that is not on the main actor, as background work does: every test but `screenShowsTheImport` |
/// | the photos of one camera | that camera's only, oldest first: `photosOfOneCamera` | — | — | — |
/// | the counts per camera | right as soon as the import returns: `countsWhenImportReturns` | — | — | — |
/// | a photo imported again | its new record replaces the old, counted once: `importingAgainReplaces` | — | — | — |
/// | a photo imported again with another camera's record | — the legacy code recounts only the new camera, so the old one keeps a stale count; the starter does the same, and the lesson is the compile fix, not this count | | | |
/// | many callers at once: imports, and queries made again and again until they end, from several tasks | every photo of every import: `manyCallersAtOnce` | `manyCallersAtOnce` (a query that does not wait for the actor meets an add) | — | any task |
/// | the import screen | its grid and its sidebar show the import: `screenShowsTheImport` | — | — | the main actor: `screenShowsTheImport`; the index's adds never on it, from the screen or a background task: `indexesOffTheMainActor` |
/// | cancellation | — the catalog promises nothing for a cancelled import | | | |
/// | an import that runs while another is half done (one of its reads held by the library's `holdReads(ofCamera:)`; the second import must end while that read is still held: a catalog blocked by the first, concurrentPerform or a semaphore, makes it wait the hold's 5 s out) | both return all their photos, and the counts hold both: `importWhileAnotherIsHalfDone` (an import that keeps its photos or counts in the catalog's state across its await loses the other's) | — | — | any task |
/// | a catalog no longer used | — created once at launch and kept: its release is not tested (a change handler that keeps it alive is harmless here) | | | |
@Suite("10.5 A library that is not ready", .serialized)
struct LibraryNotReadyTests {
  @Test("An import returns every photo with EXIF, in the order of the files")
  func importReturnsEveryPhoto() async throws {
    let shots = catalogShots(prefix: "every", count: 12)
    let files = Self.interleave(shots.map(\.file), with: ["every-scan.png", "every-note.txt"])
    let (photos, indexed) = try await Self.withinDeadline("importPhotos(_:)") {
      let catalog = PhotoCatalog()
      let photos = await catalog.importPhotos(files).map(CatalogShot.init)
      var indexed: [CatalogShot] = []
      for camera in catalogCameras {
        indexed += await catalog.photos(takenWith: camera).map(CatalogShot.init)
      }
      return (photos, indexed)
    }

    #expect(
      photos == shots.map(\.shot),
      Comment(
        rawValue: "importPhotos(_:) returned \(photos.count) photos for \(shots.count) files "
          + "with an EXIF block (and 2 without): expected \(shots.map(\.shot)), got \(photos). "
          + "It must return each photo once, with the record read from its file, in the order "
          + "of the files, and leave out the files without EXIF"
          + (photos.isEmpty
            ? ". None came back: did it return before its reads had finished? Wait for every "
              + "read (a task group's results), not for tasks nobody awaits"
            : photos.count < shots.count && Array(shots.map(\.shot).prefix(photos.count)) == photos
              ? ". They stop before a file without EXIF: skip such a file "
                + "and go on with the next, rather than ending there"
              : "")))
    #expect(
      Set(indexed.map(\.name)) == Set(shots.map(\.shot.name)),
      Comment(
        rawValue: "after the import, the catalog must hold every imported photo: "
          + "photos(takenWith:) found \(indexed.count) of \(shots.count)"))
  }

  @Test("MetadataIndex is never entered by two threads at once during an import")
  func indexOneThreadAtATime() async throws {
    let shots = catalogShots(prefix: "alone", count: 24)
    let before = MetadataIndex.concurrentEntries
    let photos = try await Self.withinDeadline("importPhotos(_:)", checksPool: false) {
      await PhotoCatalog().importPhotos(shots.map(\.file)).map(CatalogShot.init)
    }
    let entered = MetadataIndex.concurrentEntries - before

    #expect(
      photos == shots.map(\.shot),
      Comment(
        rawValue: photos.count == shots.count
          ? "importPhotos(_:) returned its \(shots.count) photos in another order: "
            + "\(photos.prefix(3).map(\.name)) …; it must return them in the order of the files, "
            + "not in the order their reads finished"
          : "importPhotos(_:) returned \(photos.count) of the \(shots.count) photos it read"))
    #expect(entered == 0, Comment(rawValue: Self.overlapMessage(entered, "one import of 24 files")))
  }

  @Test("An import reads its files in parallel, on tasks of their own")
  func readsInParallel() async throws {
    // One pool thread cannot overlap two reads, however they are written.
    guard ProcessInfo.processInfo.activeProcessorCount >= 2 else { return }
    let shots = catalogShots(prefix: "parallel", count: 16)
    // With the pool check off in the whole process: another test's check, running at the
    // same time, holds all of the pool's threads but one, and reads could not overlap. Other
    // tests may keep a thread of the pool busy for a moment too: an import that reads in
    // parallel shows it once the pool is free, so it gets up to 8 imports; one that reads
    // one file at a time never does.
    var photos: [CatalogShot] = []
    var together = 0
    for _ in 1...8 where together == 0 {
      let before = ExifRecord.readsInParallel
      photos = try await withoutPoolCheck {
        try await Self.withinDeadline("importPhotos(_:)", checksPool: false) {
          await PhotoCatalog().importPhotos(shots.map(\.file)).map(CatalogShot.init)
        }
      }
      together = ExifRecord.readsInParallel - before
      if together == 0 { try await Task.sleep(for: .milliseconds(100)) }
    }

    #expect(photos == shots.map(\.shot), "importPhotos(_:) must return every photo it read")
    #expect(
      together > 0,
      Comment(
        rawValue: "the \(shots.count) files were read one at a time: no read of an EXIF block "
          + "ever ran alongside another. importPhotos(_:) promises to read each file on a task "
          + "of its own, so that a large import keeps every core busy. Reading is thread-safe "
          + "(the library says so): read in child tasks, off the actor or lock that guards the "
          + "index, and bring only the index's work back to it"))
  }

  @Test("The photos of one camera, oldest first")
  func photosOfOneCamera() async throws {
    let shots = catalogShots(prefix: "camera", count: 12)
    let byCamera = try await Self.withinDeadline("photos(takenWith:)") {
      let catalog = PhotoCatalog()
      _ = await catalog.importPhotos(Array(shots.map(\.file).reversed()))
      var byCamera: [String: [CatalogShot]] = [:]
      for camera in catalogCameras + ["Kodak Brownie"] {
        byCamera[camera] = await catalog.photos(takenWith: camera).map(CatalogShot.init)
      }
      return byCamera
    }

    for camera in catalogCameras {
      let expected = shots.map(\.shot).filter { $0.camera == camera }.sorted {
        $0.second < $1.second
      }
      #expect(
        byCamera[camera] == expected,
        Comment(
          rawValue: "photos(takenWith: \"\(camera)\") must return that camera's photos, oldest "
            + "first: expected \(expected.map(\.name)), got \(byCamera[camera]?.map(\.name) ?? [])")
      )
    }
    #expect(byCamera["Kodak Brownie"] == [], "a camera that took no photo has none")
  }

  @Test("The counts per camera are right as soon as the import returns")
  func countsWhenImportReturns() async throws {
    let shots = catalogShots(prefix: "counts", count: 15)
    let (imported, counts) = try await Self.withinDeadline("photoCountsByCamera()") {
      let catalog = PhotoCatalog()
      let imported = await catalog.importPhotos(shots.map(\.file)).count
      return (imported, await catalog.photoCountsByCamera())
    }
    let expected = Self.counts(of: shots)

    #expect(
      counts == expected,
      Comment(
        rawValue: "right after importPhotos(_:) returned, photoCountsByCamera() was "
          + "\(Self.listed(counts)), not \(Self.listed(expected)): "
          + (imported < shots.count
            ? "the import returned \(imported) of its \(shots.count) photos, so some files "
              + "were never read or added: every file with an EXIF block must be imported"
            : Self.countsFault(counts, expected)
              ?? "each camera's count must be up to date by the time the import returns "
              + "(counted on the actor right after each add, not later in another task, and "
              + "not before the photo is in the index)")))
  }

  @Test("A photo imported again replaces its record and is counted once")
  func importingAgainReplaces() async throws {
    let shots = catalogShots(prefix: "again", count: 9)
    // The first photo again, with a new record: taken last now, and larger.
    let first = shots[0].shot
    let retaken = CatalogShot(
      name: first.name, camera: first.camera, second: 1_800_000_000, width: 6000, height: 4000)
    let (again, counts, ofCamera) = try await Self.withinDeadline("importPhotos(_:)") {
      let catalog = PhotoCatalog()
      _ = await catalog.importPhotos(shots.map(\.file))
      _ = await catalog.importPhotos(shots.map(\.file))
      let again = await catalog.importPhotos([retaken.file]).map(CatalogShot.init)
      let counts = await catalog.photoCountsByCamera()
      let ofCamera = await catalog.photos(takenWith: first.camera).map(CatalogShot.init)
      return (again, counts, ofCamera)
    }

    #expect(
      counts == Self.counts(of: shots),
      Comment(
        rawValue: "after importing the same \(shots.count) photos twice (and one of them a "
          + "third time), photoCountsByCamera() was \(Self.listed(counts)), not "
          + "\(Self.listed(Self.counts(of: shots))): "
          + (Self.countsFault(
            counts, Self.counts(of: shots), countingAgain: true, afterEarlierImports: true)
            ?? "a photo imported again replaces the one of the same name, so it must be "
            + "counted once")))
    #expect(again == [retaken], "importing a photo again returns its new record")
    #expect(
      ofCamera.last == retaken && ofCamera.filter { $0.name == first.name }.count == 1,
      Comment(
        rawValue: "a photo imported again with a new record must be listed once, with the new "
          + "record (taken last now): photos(takenWith:) returned \(ofCamera)"))
  }

  @Test("Imports and queries from several tasks at once: every photo, one thread in the index")
  func manyCallersAtOnce() async throws {
    let batches = (0..<4).map { catalogShots(prefix: "caller\($0)", count: 8) }
    let all = batches.joined().map(\.shot)
    let before = MetadataIndex.concurrentEntries
    let (imported, held, counts) = try await Self.withinDeadline(
      "importPhotos(_:) from 4 tasks at once", checksPool: false
    ) {
      let catalog = PhotoCatalog()
      let importing = Locked(batches.count)
      let imported = await withTaskGroup(of: [CatalogShot].self) { group in
        for batch in batches {
          group.addTask {
            let photos = await catalog.importPhotos(batch.map(\.file)).map(CatalogShot.init)
            importing.withLock { $0 -= 1 }
            return photos
          }
          // A screen asking for photos and counts again and again while the imports run
          // (a query that does not wait for the actor meets an add in the index).
          group.addTask {
            var rounds = 0
            repeat {
              for camera in catalogCameras {
                _ = await catalog.photos(takenWith: camera).count
                _ = await catalog.photoCountsByCamera()
              }
              rounds += 1
              await Task.yield()
            } while importing.value > 0 && rounds < 10_000
            return []
          }
        }
        var imported: [CatalogShot] = []
        for await photos in group { imported += photos }
        return imported
      }
      var held: [CatalogShot] = []
      for camera in catalogCameras {
        held += await catalog.photos(takenWith: camera).map(CatalogShot.init)
      }
      return (imported, held, await catalog.photoCountsByCamera())
    }
    let entered = MetadataIndex.concurrentEntries - before

    #expect(
      Set(imported) == Set(all) && imported.count == all.count,
      "4 imports of 8 photos at once must each return their own 8 photos")
    #expect(
      Set(held) == Set(all),
      Comment(
        rawValue: "after 4 imports of 8 photos at once, the catalog held \(held.count) "
          + "photos, not \(all.count): every import must reach the one catalog"))
    #expect(
      counts == Self.counts(of: batches.flatMap { $0 }),
      Comment(
        rawValue: "after 4 imports of 8 photos at once, photoCountsByCamera() was "
          + "\(Self.listed(counts)), not \(Self.listed(Self.counts(of: batches.flatMap { $0 }))): "
          + "every import must count its photos in the one catalog"))
    #expect(
      entered == 0,
      Comment(rawValue: Self.overlapMessage(entered, "4 imports and queries from 8 tasks")))
  }

  @Test("An import that runs while another is half done: both keep their photos and counts")
  func importWhileAnotherIsHalfDone() async throws {
    // The first import's last file is read slowly: the library holds its read until the
    // second import has returned, so the catalog sees the second one run from start to end
    // while the first waits for its read, as a large file would make it wait.
    let first = catalogShots(prefix: "halfway", count: 6)
    let slow = CatalogShot(
      name: "halfway-slow.jpg", camera: "Leica Q3", second: 1_700_000_999, width: 6000,
      height: 4000)
    let second = catalogShots(prefix: "meanwhile", count: 6, cameras: ["Sony A7 IV", "Nikon Z6"])
    let hold = ExifRecord.holdReads(ofCamera: slow.camera)
    defer { hold.release() }
    // With the pool check off in the whole process: the held read holds a thread of the
    // pool, and another test's check, running meanwhile, would find its last free thread
    // blocked and blame its own test.
    let outcome = try await withoutPoolCheck {
      try await Self.withinDeadline(
        "importPhotos(_:) while another import waits for a read", seconds: 15, checksPool: false
      ) {
        let catalog = PhotoCatalog()
        let firstImport = Task {
          await catalog.importPhotos(first.map(\.file) + [slow.file]).map(CatalogShot.init)
        }
        let held = await eventually(within: .seconds(5)) { hold.readsWaiting > 0 }
        // Give the first import's other reads time to reach the catalog (up to a second; a
        // catalog that adds them only at the end is right too, and is not waited for).
        for _ in 0..<200 {
          var indexed = 0
          for camera in catalogCameras { indexed += await catalog.photos(takenWith: camera).count }
          if indexed == first.count { break }
          try await Task.sleep(for: .milliseconds(5))
        }
        let secondPhotos = await catalog.importPhotos(second.map(\.file)).map(CatalogShot.init)
        let countsMeanwhile = await catalog.photoCountsByCamera()
        // The held read gives up after 5 s: still waiting means the second import did not
        // need the first one's read to end.
        let stillHeld = hold.readsWaiting > 0
        hold.release()
        let firstPhotos = await firstImport.value
        return (
          held, firstPhotos, secondPhotos, countsMeanwhile, await catalog.photoCountsByCamera(),
          stillHeld
        )
      }
    }
    let (held, firstPhotos, secondPhotos, countsMeanwhile, counts, stillHeld) = outcome
    let all = first.map(\.shot) + [slow]

    #expect(
      held,
      Comment(
        rawValue: "the import never read its file of a \(slow.camera), so the test could not "
          + "hold it: importPhotos(_:) must read every file"))
    #expect(
      !held || stillHeld,
      Comment(
        rawValue: "an import made while another waited for one slow read could not run until "
          + "that read gave up waiting (after 5 s): the catalog was held for the whole of the "
          + "other import, by a wait on its own thread for the reads (concurrentPerform, a "
          + "semaphore, a group's wait), not a suspension; every other caller waits with it"))
    #expect(
      secondPhotos == second.map(\.shot),
      Comment(
        rawValue: "an import made while another one waited for a read returned "
          + "\(secondPhotos.map(\.name)), not its \(second.count) photos "
          + "\(second.map(\.shot.name))"))
    // The cause named only when the evidence points at it: the other import's result was
    // right, and this one lost photos it had, or counts the other had made were undone.
    let lostToTheOther =
      secondPhotos == second.map(\.shot) && firstPhotos.count < all.count
      && Set(firstPhotos).isSubset(of: all)
    #expect(
      firstPhotos == all,
      Comment(
        rawValue: "an import that waited for a read while another import ran returned "
          + "\(firstPhotos.map(\.name)), not its \(all.count) photos \(all.map(\.name)). "
          + (lostToTheOther
            ? "Another import ran on the actor while this one awaited its reads: an actor is "
              + "reentrant, so what an import keeps in the catalog's properties across an "
              + "await (the photos of the import under way) another import can change. Keep "
              + "an import's own photos in its own local variables, or read them back from the "
              + "index"
            : "It must return each of its photos with EXIF, once, in the order of its files")))
    let secondCounted = Self.counts(of: second).allSatisfy { countsMeanwhile[$0.key] == $0.value }
    #expect(
      secondCounted,
      Comment(
        rawValue: "right after an import that ran while another waited for a read, "
          + "photoCountsByCamera() was \(Self.listed(countsMeanwhile)): it must count that "
          + "import's photos (\(Self.listed(Self.counts(of: second)))) by the time it returns"))
    let expected = Self.counts(of: first).merging(Self.counts(of: second)) { $0 + $1 }
      .merging([slow.camera: 1]) { $0 + $1 }
    let undone = secondCounted && Self.counts(of: second).contains { counts[$0.key] != $0.value }
    #expect(
      counts == expected,
      Comment(
        rawValue: "after an import that ran while another waited for a read, and then that "
          + "one, photoCountsByCamera() was \(Self.listed(counts)), not "
          + "\(Self.listed(expected)). "
          + (undone
            ? "The counts of the import that ran in between were right when it returned, and "
              + "were undone when the other one ended. An actor is reentrant: while an import "
              + "awaits its reads, another import runs on the actor and changes the counts. An "
              + "import that copied the counts before its await and writes the copy back after "
              + "it undoes the other's; change the actor's counts in place, in steps with no "
              + "await inside"
            : Self.countsFault(counts, expected, afterEarlierImports: true)
              ?? "Each import must count its photos by the time it returns")))
  }

  @Test("The import screen shows the photos and the counts, on the main actor")
  func screenShowsTheImport() async throws {
    let shots = catalogShots(prefix: "screen", count: 9)
    let (grid, sidebar) = try await Self.withinDeadline("PhotoImportScreen.importPicked(_:)") {
      await showOnScreen(shots.map(\.file), catalog: PhotoCatalog())
    }

    #expect(
      grid == shots.map(\.shot),
      "the screen's grid must show the imported photos, in the order they were picked")
    #expect(
      sidebar == Self.counts(of: shots),
      Comment(
        rawValue: "the screen's sidebar showed \(Self.listed(sidebar)), not "
          + "\(Self.listed(Self.counts(of: shots))): it must show each camera's count"))
  }

  @Test("Imports index their photos off the main actor, wherever they are called from")
  func indexesOffTheMainActor() async throws {
    let onTheMainActor = Locked(0)
    let adds = Locked(0)
    let watch = MetadataIndex.watchAdds {
      adds.withLock { $0 += 1 }
      if Thread.isMainThread || DispatchQueue.getSpecific(key: catalogMainQueueMark) != nil {
        onTheMainActor.withLock { $0 += 1 }
      }
    }
    defer { watch.end() }
    let shots = catalogShots(prefix: "offmain", count: 6)
    let catalog = PhotoCatalog()
    _ = try await Self.withinDeadline("PhotoImportScreen.importPicked(_:)") {
      await showOnScreen(shots.map(\.file), catalog: catalog)
    }
    _ = try await Self.withinDeadline("importPhotos(_:) from a background task") {
      _ = await catalog.importPhotos(shots.map(\.file)).count
    }

    #expect(adds.value >= 12, "both imports must add their photos to the index")
    #expect(
      onTheMainActor.value == 0,
      "\(onTheMainActor.value) of \(adds.value) adds to the index ran on the main actor: the import screen and the app's background tasks share the catalog, and its index work (slow: each add takes a while) must not hold up the screen, so it belongs off the main actor"
    )
  }

  // MARK: Helpers

  /// Runs `operation` with a deadline, the way every test here waits.
  ///
  /// `checksPool: false` where the test needs two threads of the concurrency pool at once
  /// (two reads, or two threads in the index): the check holds all of them but one.
  private static func withinDeadline<T: Sendable>(
    _ name: String, seconds: Int = 10, checksPool: Bool = true,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: sending @escaping @isolated(any) () async throws -> T
  ) async throws -> T {
    try await withDeadline(
      .seconds(seconds), name,
      hint: "the catalog never answered: does an actor method wait for something that needs "
        + "the same actor, or a lock wait for itself?",
      checksPool: checksPool, sourceLocation: sourceLocation, operation)
  }

  private static func overlapMessage(_ entered: Int, _ during: String) -> String {
    "MetadataIndex was entered by a second thread while another was inside it \(entered) "
      + "time\(entered == 1 ? "" : "s") during \(during). The library documents it as not "
      + "thread-safe, and `@preconcurrency import` only stops the compiler from saying so: "
      + "it checks nothing. Keep every use of the index inside one actor (its own methods "
      + "only), so that one thread at a time is inside it; the child tasks that read the "
      + "files may hand the records back, but must not touch the index"
  }

  /// What is wrong with `counts`, when a camera is missing or counted too high; `nil` when
  /// the counts are only short (the caller says why that may be).
  private static func countsFault(
    _ counts: [String: Int], _ expected: [String: Int], countingAgain: Bool = false,
    afterEarlierImports: Bool = false
  ) -> String? {
    // A camera missing after one import is only not counted yet: the caller says why.
    let missing = expected.keys.filter { counts[$0] == nil }.sorted()
    if afterEarlierImports, !missing.isEmpty {
      return "\(missing.joined(separator: ", ")) had no count at all, though their photos are "
        + "in the catalog: counts of photos imported earlier were dropped. An import adds to "
        + "the catalog's counts; it must not empty them or replace them with its own"
    }
    if let (camera, count) = counts.sorted(by: { $0.key < $1.key }).first(where: {
      $0.value > expected[$0.key, default: 0]
    }) {
      return "\(camera) was counted \(count) times for \(expected[camera, default: 0]) photos. "
        + (countingAgain
          ? "A photo imported again replaces the one of the same name, so it must be counted "
            + "once: count a camera's photos in the index, as the change handler did, rather "
            + "than adding one for each photo imported"
          : "Count only that camera's photos, in the index (photos(takenWith:)), not every "
            + "photo of the index or of the import")
    }
    return nil
  }

  /// "Canon EOS R6: 3, Fujifilm X100V: 4": counts in a stable order.
  private static func listed(_ counts: [String: Int]) -> String {
    counts.isEmpty
      ? "empty"
      : counts.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
  }

  private static func counts(
    of shots: [(shot: CatalogShot, file: PickedPhotoFile)]
  ) -> [String: Int] {
    Dictionary(shots.map { ($0.shot.camera, 1) }, uniquingKeysWith: +)
  }

  /// `files` with a file that has no EXIF block after every fifth, and `extras` named so.
  private static func interleave(
    _ files: [PickedPhotoFile], with extras: [String]
  ) -> [PickedPhotoFile] {
    var result: [PickedPhotoFile] = []
    var extras = extras[...]
    for (position, file) in files.enumerated() {
      result.append(file)
      if position % 5 == 4, let name = extras.popFirst() {
        result.append(PickedPhotoFile(name: name, contents: Data("PNG not a photo".utf8)))
      }
    }
    return result + extras.map { PickedPhotoFile(name: $0, contents: Data()) }
  }
}

/// The cameras of the tests' photos.
private let catalogCameras = ["Fujifilm X100V", "Canon EOS R6", "iPhone 15 Pro"]

/// What a test sees of a cataloged photo: plain values, which any task may hold.
private struct CatalogShot: Hashable, Sendable, CustomStringConvertible {
  var name: String
  var camera: String
  var second: Int
  var width: Int
  var height: Int

  init(name: String, camera: String, second: Int, width: Int, height: Int) {
    self.name = name
    self.camera = camera
    self.second = second
    self.width = width
    self.height = height
  }

  init(_ photo: CatalogedPhoto) {
    self.init(
      name: photo.name, camera: photo.exif.cameraModel,
      second: Int(photo.exif.capturedAt.timeIntervalSince1970), width: photo.exif.pixelWidth,
      height: photo.exif.pixelHeight)
  }

  /// A photo file with this shot's EXIF block, then some picture bytes.
  var file: PickedPhotoFile {
    let exif = ExifRecord(
      cameraModel: camera, capturedAt: Date(timeIntervalSince1970: Double(second)),
      pixelWidth: width, pixelHeight: height)
    return PickedPhotoFile(name: name, contents: exif.exifBlock + Data(name.utf8))
  }

  var description: String { "\(name) (\(camera), \(second) s, \(width)×\(height))" }
}

/// `count` shots named `prefix-0` and so on, from the cameras in turn (the three above unless
/// told), taken at distinct moments out of order, with their files.
private func catalogShots(
  prefix: String, count: Int, cameras: [String] = catalogCameras
) -> [(shot: CatalogShot, file: PickedPhotoFile)] {
  (0..<count).map { number in
    let shot = CatalogShot(
      name: "\(prefix)-\(number).jpg", camera: cameras[number % cameras.count],
      second: 1_700_000_000 + (number * 7_919) % 1_000, width: 4000 + number, height: 3000)
    return (shot, shot.file)
  }
}

/// Imports `files` through a new import screen, on the main actor as the app does, and
/// returns what its grid and sidebar show.
@MainActor
private func showOnScreen(
  _ files: [PickedPhotoFile], catalog: PhotoCatalog
) async -> ([CatalogShot], [String: Int]) {
  let screen = PhotoImportScreen(catalog: catalog)
  await screen.importPicked(files)
  return (screen.grid.map(CatalogShot.init), screen.sidebar)
}

/// Marks the main queue, so that code can tell it runs there (as main-actor code does, on a
/// thread that is not always the main thread under `swift test` on Linux).
private let catalogMainQueueMark: DispatchSpecificKey<Bool> = {
  let key = DispatchSpecificKey<Bool>()
  DispatchQueue.main.setSpecific(key: key, value: true)
  return key
}()
