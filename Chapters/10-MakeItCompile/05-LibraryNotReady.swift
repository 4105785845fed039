import Foundation
import LegacyKit

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
final class PhotoCatalog {
  private let index = MetadataIndex()
  private var photosPerCamera: [String: Int] = [:]

  init() {
    // Keeps the sidebar's counts up to date. The camera is counted again from the index, so
    // a photo imported twice is counted once.
    index.changeHandler = { [unowned self] index, exif in
      self.photosPerCamera[exif.cameraModel] = index.photos(takenWith: exif.cameraModel).count
    }
  }

  /// Reads the EXIF block of every file, each on a task of its own so that a large import
  /// keeps every core busy, and adds each photo to the catalog. Returns the photos in the
  /// order of `files`, leaving out a file that has no EXIF block. A photo imported again
  /// replaces the one of the same name.
  func importPhotos(_ files: [PickedPhotoFile]) async -> [CatalogedPhoto] {
    let index = self.index
    await withTaskGroup(of: Void.self) { group in
      for file in files {
        group.addTask {
          if let exif = ExifRecord(reading: file.contents) {
            index.add(exif, forPhoto: file.name)
          }
        }
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
