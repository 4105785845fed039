import Dispatch
import Synchronization

// Code from a photo app, written before Swift 6. It builds in the Swift 5 language mode and
// has worked for years; in the Swift 6 mode it does not compile. Make it compile, and keep
// every promise its doc comments make.

/// How the user wants photos exported. The export sheet edits a model's options in place
/// (`model.options.maxSide = 2048`), at any moment, also while an export runs.
///
/// A value type: an export gets its own copy when it starts, so an edit made meanwhile
/// cannot reach it (the class every export shared could be edited halfway through, while
/// worker threads read it), and a struct of `Sendable` values is `Sendable` by itself.
struct PhotoExportOptions: Equatable, Sendable {
  /// The longest side an exported photo may have, in pixels.
  var maxSide: Int
  /// The text stamped on every exported photo; `nil` for none.
  var watermark: String?

  init(maxSide: Int, watermark: String? = nil) {
    self.maxSide = maxSide
    self.watermark = watermark
  }
}

/// The image pipeline (scale, stamp, encode) that exports run each photo through, set up
/// once at launch. Running it only reads its arguments, so it may run on any thread, for
/// several photos at a time; it is slow, so it must never run on the main actor.
///
/// `Sendable`, checked by the compiler: a final class whose only stored property is a `let`
/// of a `Sendable` type. The steps are `@Sendable`, as the pipeline's promise says: safe to
/// call from several threads at once.
final class PhotoExportPipeline: Sendable {
  private let steps: @Sendable (PhotoToExport, PhotoExportOptions) -> ExportedPhoto

  init(steps: @escaping @Sendable (PhotoToExport, PhotoExportOptions) -> ExportedPhoto) {
    self.steps = steps
  }

  /// Runs `photo` through the pipeline with `options`.
  func run(_ photo: PhotoToExport, options: PhotoExportOptions) -> ExportedPhoto {
    steps(photo, options)
  }
}

/// How far an export has got. The exporter counts each photo on its worker threads as soon
/// as that photo is exported; the export screen reads it meanwhile, to draw its progress bar.
///
/// One object that the exporter's threads and the screen share, so a class (a struct would
/// be copied, and the screen would never see a count). Its names are kept in a `Mutex`, so
/// the class is `Sendable` with nothing unchecked, and reads stay synchronous.
final class PhotoExportProgress: Sendable {
  /// How many photos the export has.
  let total: Int
  private let names = Mutex<[String]>([])

  init(total: Int) {
    self.total = total
  }

  /// The names of the photos exported so far, each once, in the order they were counted.
  /// Read from any thread, synchronously.
  var exported: [String] {
    names.withLock { $0 }
  }

  /// The share of the photos exported so far, from 0 to 1. Read from any thread,
  /// synchronously.
  var fractionDone: Double {
    total == 0 ? 1 : Double(exported.count) / Double(total)
  }

  /// Counts the photo named `name` as exported. Called on the exporter's worker threads,
  /// synchronously.
  func photoExported(_ name: String) {
    names.withLock { $0.append(name) }
  }
}

/// Exports `photos` on background queues, several at a time, with `options` as they are
/// when it is called, and counts each in `progress` as soon as it is exported; then calls
/// `completion` once, on a background queue, with the exported photos in the order of
/// `photos`. The share extension calls it.
func exportPhotos(
  _ photos: [PhotoToExport], options: PhotoExportOptions, pipeline: PhotoExportPipeline,
  progress: PhotoExportProgress, completion: @escaping @Sendable ([ExportedPhoto]) -> Void
) {
  let group = DispatchGroup()
  // The worker blocks share one array: it lives in a Mutex, in a Sendable box they all
  // capture. (A local `let` Mutex captured by the blocks would do as well.)
  let exported = ExportedPhotoSlots(count: photos.count)
  for (index, photo) in photos.enumerated() {
    DispatchQueue.global().async(group: group) {
      let file = pipeline.run(photo, options: options)
      exported.store(file, at: index)
      progress.photoExported(photo.name)
    }
  }
  group.notify(queue: .global()) {
    completion(exported.photos)
  }
}

/// Exports `photos` several at a time, off the caller's actor, with `options` as they are
/// when it is called, and counts each in `progress` as soon as it is exported; returns the
/// exported photos in the order of `photos`.
func exportPhotos(
  _ photos: [PhotoToExport], options: PhotoExportOptions, pipeline: PhotoExportPipeline,
  progress: PhotoExportProgress
) async -> [ExportedPhoto] {
  await withTaskGroup(of: (Int, ExportedPhoto).self) { group in
    for (index, photo) in photos.enumerated() {
      group.addTask {
        let file = pipeline.run(photo, options: options)
        progress.photoExported(photo.name)
        return (index, file)
      }
    }
    // Each child hands its photo back instead of writing into an array they share: the
    // array stays in this one task, which alone reads and writes it.
    var exported = [ExportedPhoto?](repeating: nil, count: photos.count)
    for await (index, file) in group {
      exported[index] = file
    }
    return exported.map { $0! }
  }
}

/// The export screen's model. It lives on the main actor, like the screen.
@MainActor
final class PhotoExportModel {
  /// The options on the export sheet, which edits them in place.
  var options: PhotoExportOptions
  /// The pipeline that exports run photos through.
  let pipeline: PhotoExportPipeline
  /// How far the newest export has got; `nil` before the first. The screen draws its
  /// progress bar from it.
  private(set) var progress: PhotoExportProgress?
  /// The photos of the newest finished export, in the order they were picked.
  private(set) var exported: [ExportedPhoto] = []

  init(options: PhotoExportOptions, pipeline: PhotoExportPipeline) {
    self.options = options
    self.pipeline = pipeline
  }

  /// Starts exporting `photos` with the options as they are now, and returns at once with
  /// `progress` set: the pipeline is slow, so the export runs off the main actor and the
  /// screen stays responsive meanwhile. Sets `exported` once every photo is done; the task
  /// it returns ends then.
  func startExport(_ photos: [PhotoToExport]) -> Task<Void, Never> {
    let progress = PhotoExportProgress(total: photos.count)
    self.progress = progress
    // A copy of the options as they are now: the sheet's later edits change the model's,
    // not this one.
    let options = options
    // A task on the main actor, like this method, with the caller's priority and task-local
    // values: it suspends at the await, and the nonisolated export runs the photos off the
    // main actor meanwhile. (`Task.detached` would drop those, to gain nothing.)
    return Task {
      exported = await exportPhotos(
        photos, options: options, pipeline: pipeline, progress: progress)
    }
  }
}

/// The photos of one callback export, filled in by its worker blocks in any order.
private final class ExportedPhotoSlots: Sendable {
  private let slots: Mutex<[ExportedPhoto?]>

  init(count: Int) {
    slots = Mutex(Array(repeating: nil, count: count))
  }

  func store(_ photo: ExportedPhoto, at index: Int) {
    slots.withLock { $0[index] = photo }
  }

  /// Every photo, in order; call it once every block has stored its photo.
  var photos: [ExportedPhoto] {
    slots.withLock { $0.map { $0! } }
  }
}

// MARK: The photos: leave them as they are.

/// A photo the user picked for export.
struct PhotoToExport: Equatable, Sendable {
  var name: String
  var pixels: [UInt8]
}

/// A photo as exported: scaled, stamped and encoded, ready to share.
struct ExportedPhoto: Equatable, Sendable {
  var name: String
  var bytes: [UInt8]
}
