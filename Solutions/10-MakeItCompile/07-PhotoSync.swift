import Dispatch
import LegacyKit
import Synchronization

// The sync module of a photo app, written over the years before Swift 6: it builds in the
// Swift 5 language mode and has synced millions of photos; in the Swift 6 mode it does not
// compile. Migrate it: make it compile with no warning and no escape hatch, and keep every
// promise its doc comments make. Once the first errors are fixed, the compiler checks what
// each value is sent to, and more errors come.

// MARK: - Since launch

/// The count behind `photosUploadedSinceLaunch`. An `Atomic` in a `let` is global state the
/// compiler can prove safe.
private let photosUploaded = Atomic<Int>(0)

/// How many photos every sync together has uploaded since launch, for the settings screen.
/// Read from any thread, synchronously.
///
/// A computed variable has no storage of its own, so nothing in it can race.
var photosUploadedSinceLaunch: Int {
  photosUploaded.load(ordering: .relaxed)
}

/// Counts one uploaded photo. The sync engines call it as they upload, each on its own
/// thread, and the count has grown by the time it returns.
func countUploadedPhoto() {
  // One indivisible step, not a load and a store: two engines counting at once never
  // count the same number.
  photosUploaded.add(1, ordering: .relaxed)
}

/// A photo edited both on this device and on the server since it was last synced.
struct PhotoSyncConflict: Equatable, Sendable {
  let photoID: String
  /// The revision on this device.
  let localRevision: Int
  /// The newer revision the server has.
  let serverRevision: Int
}

/// The conflicts waiting for the user to settle, shared by every sync engine and screen.
///
/// `Sendable` because its only stored property is a `Mutex`: the compiler checks that, so
/// `shared` can be a `static let`. The queue with its barriers was thread-safe too, but
/// nothing told the compiler so; a lock it knows replaces it, and each call does its whole
/// work in one locked step.
final class PhotoConflictStore: Sendable {
  static let shared = PhotoConflictStore()

  private let conflicts = Mutex<[String: PhotoSyncConflict]>([:])

  /// Keeps `conflict`, in place of any other of the same photo. Called from any thread; a
  /// read made after it returns sees the conflict.
  func keep(_ conflict: PhotoSyncConflict) {
    conflicts.withLock { $0[conflict.photoID] = conflict }
  }

  /// Takes the conflict of `photoID` out of the store, for the one caller that settles it:
  /// of two callers at once, one gets it and the other `nil`. Called from any thread.
  func settle(_ photoID: String) -> PhotoSyncConflict? {
    // The look and the removal in one locked step: two callers never both find it.
    conflicts.withLock { $0.removeValue(forKey: photoID) }
  }

  /// The conflicts waiting, by photo ID. Called from any thread.
  var pending: [PhotoSyncConflict] {
    conflicts.withLock { conflicts in conflicts.values.sorted { $0.photoID < $1.photoID } }
  }
}

// MARK: - The engine

/// What became of a photo in a sync.
enum PhotoSyncOutcome: Equatable, Sendable {
  /// Sent to the server.
  case uploaded
  /// The server had this revision already: nothing was sent.
  case upToDate
  /// The server had a newer revision: the photo is in the conflict store.
  case conflict
}

/// The photos of one sync, in order, and what became of each: the engine notes it here.
final class PhotoSyncBatch {
  let photos: [LibraryPhoto]
  private(set) var outcomes: [LibraryPhoto: PhotoSyncOutcome] = [:]

  init(photos: [LibraryPhoto]) {
    self.photos = photos
  }

  func note(_ outcome: PhotoSyncOutcome, for photo: LibraryPhoto) {
    outcomes[photo] = outcome
  }
}

/// Uploads photos to the server, one sync at a time: it is an actor, and `sync` never
/// suspends, so two syncs never interleave and the server never gets two uploads at once.
/// It remembers the revision the server has of each photo, so that a revision is uploaded
/// once, however many syncs ask for it.
actor PhotoSyncEngine {
  private let server: any PhotoSyncServer
  private var revisionsOnServer: [String: Int] = [:]

  init(server: any PhotoSyncServer) {
    self.server = server
  }

  /// Syncs the photos of `batch`, in order, and notes in the batch what became of each.
  /// Counts every upload with `countUploadedPhoto()` and keeps every conflict in the
  /// shared store. Calls `progress` after each photo, with how many are done, right there on
  /// the engine. Before each photo it checks whether the calling task was cancelled: a
  /// cancelled sync stops there, the photos left without an outcome.
  ///
  /// Returns the outcomes, a `Sendable` value: the caller gives the batch up when it sends
  /// it here, and reads what became of its photos from the result, not from the batch.
  /// `progress` is `@Sendable`, as it is called here, on the engine, not where it was
  /// written.
  func sync(
    _ batch: PhotoSyncBatch, progress: @Sendable (Int) -> Void
  ) -> [LibraryPhoto: PhotoSyncOutcome] {
    for (index, photo) in batch.photos.enumerated() {
      if Task.isCancelled { break }
      if let revision = revisionsOnServer[photo.id], revision >= photo.revision {
        if revision == photo.revision {
          batch.note(.upToDate, for: photo)
        } else {
          keepConflict(photo, serverRevision: revision)
          batch.note(.conflict, for: photo)
        }
      } else {
        switch server.upload(photo) {
        case .stored:
          revisionsOnServer[photo.id] = photo.revision
          countUploadedPhoto()
          batch.note(.uploaded, for: photo)
        case .newerOnServer(let revision):
          revisionsOnServer[photo.id] = revision
          keepConflict(photo, serverRevision: revision)
          batch.note(.conflict, for: photo)
        }
      }
      progress(index + 1)
    }
    return batch.outcomes
  }

  private func keepConflict(_ photo: LibraryPhoto, serverRevision: Int) {
    PhotoConflictStore.shared.keep(
      PhotoSyncConflict(
        photoID: photo.id, localRevision: photo.revision, serverRevision: serverRevision))
  }
}

// MARK: - The screen

/// How far the running sync has got: `done` of its `total` photos.
struct PhotoSyncProgress: Equatable, Sendable {
  var done = 0
  var total = 0
}

/// The sync screen. Its state belongs to the main actor: the view reads it there, and it
/// changes only on the main thread. It lists the photos the library reports as changed, and
/// uploads them when the user taps "Sync now".
@MainActor
final class PhotoSyncScreenModel {
  /// The photos changed since they were last synced, in the order the library reported
  /// them (a photo edited twice is listed at each revision).
  private(set) var waiting: [LibraryPhoto] = []
  /// The progress bar of the running (or last) sync.
  private(set) var progress = PhotoSyncProgress()
  /// The status line: what the last sync did.
  private(set) var status = "Not synced yet"

  let engine: PhotoSyncEngine

  /// Starts listening to `library` at once.
  init(engine: PhotoSyncEngine, library: PhotoLibrary) {
    self.engine = engine
    library.register(self)
  }

  /// Uploads the waiting photos, and returns once the sync is over. The progress bar moves
  /// on the main thread, one photo at a time, in order, and each step is queued there before
  /// the engine goes on to the next photo, so the bar keeps up with the upload; it is full
  /// when this returns, unless the sync was cancelled: then it stops at the photos done.
  /// Then the photos the sync got through leave `waiting`; those it did
  /// not reach (the sync was cancelled) stay, and so does every photo reported meanwhile.
  /// The status line then says "2 uploaded, 1 up to date, 1 in conflict".
  func syncNow() async {
    let photos = waiting
    progress = PhotoSyncProgress(done: 0, total: photos.count)
    // The batch is made here and handed to the engine, which changes it: this function does
    // not touch it again, so the compiler lets it go. What became of the photos comes back
    // as a `Sendable` value. The progress closure runs on the engine; each step goes to the
    // main queue from there, in order, before the engine goes on.
    let synced = await engine.sync(PhotoSyncBatch(photos: photos)) { done in
      DispatchQueue.main.async {
        self.progress.done = done
      }
    }
    waiting.removeAll { synced[$0] != nil }
    let outcomes = Array(synced.values)
    status =
      "\(outcomes.filter { $0 == .uploaded }.count) uploaded, "
      + "\(outcomes.filter { $0 == .upToDate }.count) up to date, "
      + "\(outcomes.filter { $0 == .conflict }.count) in conflict"
  }
}

// The library calls its observers on its change queue, a background queue.
//
// So the method is `nonisolated`: it runs there and touches no state of the main actor. It
// reads the photos out of the change on that queue (the change is not thread-safe, and not
// `Sendable`), and hands them, a `Sendable` array, to the main queue: one block per change,
// in the order the library reports them.
extension PhotoSyncScreenModel: PhotoLibraryChangeObserver {
  nonisolated func photoLibraryDidChange(_ change: PhotoLibraryChange) {
    let photos = change.changedPhotos
    DispatchQueue.main.async {
      self.waiting.append(contentsOf: photos)
    }
  }
}

// MARK: The server: leave it as it is.

/// What the server said to an upload.
enum PhotoUploadReply: Equatable, Sendable {
  /// It stored the photo at this revision.
  case stored
  /// It has a newer revision of the photo, edited elsewhere, and kept it.
  case newerOnServer(revision: Int)
}

/// The app's connection to the server. `upload` sends a photo and blocks its thread until
/// the server answers. It may be called from any thread but the main thread, which it would
/// freeze.
protocol PhotoSyncServer: Sendable {
  func upload(_ photo: LibraryPhoto) -> PhotoUploadReply
}
