import Dispatch
import LegacyKit

// The sync module of a photo app, written over the years before Swift 6: it builds in the
// Swift 5 language mode and has synced millions of photos; in the Swift 6 mode it does not
// compile. Migrate it: make it compile with no warning and no escape hatch, and keep every
// promise its doc comments make. Once the first errors are fixed, the compiler checks what
// each value is sent to, and more errors come.

// MARK: - Since launch

/// How many photos every sync together has uploaded since launch, for the settings screen.
/// Read from any thread, synchronously.
var photosUploadedSinceLaunch = 0

/// Counts one uploaded photo. The sync engines call it as they upload, each on its own
/// thread, and the count has grown by the time it returns.
func countUploadedPhoto() {
  photosUploadedSinceLaunch += 1
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
/// Thread-safe: its dictionary is read on its queue, and changed there with a barrier.
final class PhotoConflictStore {
  static var shared = PhotoConflictStore()

  private let queue = DispatchQueue(label: "PhotoConflictStore", attributes: .concurrent)
  private var conflicts: [String: PhotoSyncConflict] = [:]

  /// Keeps `conflict`, in place of any other of the same photo. Called from any thread; a
  /// read made after it returns sees the conflict.
  func keep(_ conflict: PhotoSyncConflict) {
    queue.async(flags: .barrier) {
      self.conflicts[conflict.photoID] = conflict
    }
  }

  /// Takes the conflict of `photoID` out of the store, for the one caller that settles it:
  /// of two callers at once, one gets it and the other `nil`. Called from any thread.
  func settle(_ photoID: String) -> PhotoSyncConflict? {
    queue.sync(flags: .barrier) {
      conflicts.removeValue(forKey: photoID)
    }
  }

  /// The conflicts waiting, by photo ID. Called from any thread.
  var pending: [PhotoSyncConflict] {
    queue.sync {
      conflicts.values.sorted { $0.photoID < $1.photoID }
    }
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
  func sync(_ batch: PhotoSyncBatch, progress: (Int) -> Void) {
    for (index, photo) in batch.photos.enumerated() {
      if Task.isCancelled { return }
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
    let batch = PhotoSyncBatch(photos: waiting)
    progress = PhotoSyncProgress(done: 0, total: batch.photos.count)
    await engine.sync(batch) { done in
      DispatchQueue.main.async {
        self.progress.done = done
      }
    }
    waiting.removeAll { batch.outcomes[$0] != nil }
    let outcomes = Array(batch.outcomes.values)
    status =
      "\(outcomes.filter { $0 == .uploaded }.count) uploaded, "
      + "\(outcomes.filter { $0 == .upToDate }.count) up to date, "
      + "\(outcomes.filter { $0 == .conflict }.count) in conflict"
  }
}

// The library calls its observers on its change queue, a background queue.
extension PhotoSyncScreenModel: PhotoLibraryChangeObserver {
  func photoLibraryDidChange(_ change: PhotoLibraryChange) {
    DispatchQueue.main.async {
      self.waiting.append(contentsOf: change.changedPhotos)
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
