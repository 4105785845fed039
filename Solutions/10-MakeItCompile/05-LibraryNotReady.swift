import Foundation
// `ExifRecord` is immutable (only `let`s of value types), so it is safe to share between
// tasks although the library, written before Swift's concurrency checking, does not say so.
// `@preconcurrency` takes its word for that. It takes it for `MetadataIndex` too, which is
// NOT thread-safe: from here on the compiler no longer checks where the index goes, and
// keeping it inside the actor below is up to us.
@preconcurrency import LegacyKit

// Code from a photo app, written before Swift 6. It builds in the Swift 5 language mode and
// has worked for years; in the Swift 6 mode it does not compile. Make it compile, and keep
// every promise its doc comments make. `ExifRecord` and `MetadataIndex` come from a library
// that has not adopted Swift concurrency (Support/LegacyKit/PhotoMetadata.swift): you cannot
// change it, but you can read what its documentation promises.

/// A photo file the user picked for import: its name and its bytes, EXIF block first.
struct PickedPhotoFile {
  var name: String
  var contents: Data
}

/// A photo in the catalog: its file name and the EXIF metadata read from it.
struct CatalogedPhoto {
  var name: String
  var exif: ExifRecord
}

/// The app's photo catalog: the metadata of every imported photo, searchable by camera.
///
/// Created once at launch and shared: the import screen uses it from the main actor, and
/// background tasks use it from any thread, often at the same time.
///
/// An actor, because the library's `MetadataIndex` is not thread-safe: only the actor's own
/// methods touch the index, one call at a time, and it never leaves them.
actor PhotoCatalog {
  private let index = MetadataIndex()
  private var photosPerCamera: [String: Int] = [:]

  /// Reads the EXIF block of every file, each on a task of its own so that a large import
  /// keeps every core busy, and adds each photo to the catalog. Returns the photos in the
  /// order of `files`, leaving out a file that has no EXIF block. A photo imported again
  /// replaces the one of the same name.
  func importPhotos(_ files: [PickedPhotoFile]) async -> [CatalogedPhoto] {
    await withTaskGroup(of: CatalogedPhoto?.self) { group in
      for file in files {
        // A child task touches only its file and the record it reads: reading is
        // thread-safe, and the record is immutable, so it may come back to the actor.
        group.addTask {
          ExifRecord(reading: file.contents).map { CatalogedPhoto(name: file.name, exif: $0) }
        }
      }
      // Back on the actor: the photos go into the index here, one at a time, as they come.
      for await photo in group {
        if let photo { add(photo) }
      }
    }
    return files.compactMap { file in
      index.record(forPhoto: file.name).map { CatalogedPhoto(name: file.name, exif: $0) }
    }
  }

  /// The photos taken with `cameraModel`, oldest first.
  func photos(takenWith cameraModel: String) async -> [CatalogedPhoto] {
    index.photos(takenWith: cameraModel).compactMap { name in
      index.record(forPhoto: name).map { CatalogedPhoto(name: name, exif: $0) }
    }
  }

  /// How many photos each camera took, for the sidebar: up to date as soon as
  /// `importPhotos(_:)` returns.
  func photoCountsByCamera() async -> [String: Int] {
    photosPerCamera
  }

  /// Adds a photo to the index, then counts its camera again from the index, so that a
  /// photo imported twice is counted once. The index's change handler did the counting, but
  /// a closure made in `init` is not isolated to the actor and cannot touch its state;
  /// counting right after the add does the same, on the actor.
  private func add(_ photo: CatalogedPhoto) {
    let camera = photo.exif.cameraModel
    index.add(photo.exif, forPhoto: photo.name)
    photosPerCamera[camera] = index.photos(takenWith: camera).count
  }
}

// MARK: The import screen: leave it as it is.

/// The import screen: imports the photos the user picked, then shows them in its grid and
/// the catalog's counts in its sidebar.
@MainActor
final class PhotoImportScreen {
  let catalog: PhotoCatalog
  private(set) var grid: [CatalogedPhoto] = []
  private(set) var sidebar: [String: Int] = [:]

  init(catalog: PhotoCatalog) {
    self.catalog = catalog
  }

  /// Imports `files` and shows them.
  func importPicked(_ files: [PickedPhotoFile]) async {
    grid = await catalog.importPhotos(files)
    sidebar = await catalog.photoCountsByCamera()
  }
}
