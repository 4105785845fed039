import Observation

// Code from a photo viewer, written before its module adopted Swift 6.2's approachable
// concurrency. It builds and works without the module's new settings; with them (the main
// actor by default, and async functions that run on their caller's actor) it does not compile.
// Make it compile, and keep every promise its doc comments make.

/// A decoded photo: `width` × `height` grey pixels, row after row.
///
/// `nonisolated`: a plain value with no state to protect, made off the main actor by the
/// decode. In this module a type without it belongs to the main actor, and so does its
/// `Equatable` conformance: photos could then be compared only there.
nonisolated struct Photo: Equatable, Sendable {
  let width: Int
  let height: Int
  let pixels: [UInt8]
}

/// Why a photo could not be decoded. `nonisolated`: thrown off the main actor, and compared
/// anywhere (without it, its `Equatable` conformance would belong to the main actor).
nonisolated enum PhotoDecodingError: Error, Equatable {
  /// The row at this index did not expand to the photo's width.
  case badRow(Int)
}

/// A photo file, open for reading: its rows, run-length encoded, read one at a time from
/// disk. Safe to read from any thread; a read blocks its thread while the disk works.
///
/// `nonisolated`: with the module's default, the requirements would belong to the main
/// actor, and the decode could not read the file off it.
nonisolated protocol PhotoFile: Sendable {
  var width: Int { get }
  var height: Int { get }
  /// The next row's runs: pairs of a count and a grey value.
  func readRow() throws -> [UInt8]
}

/// Decodes run-length-encoded photos. It holds no state, so it needs no actor:
/// `nonisolated`.
nonisolated struct PhotoDecoder: Sendable {
  /// Reads `file` row by row and expands each row's runs into pixels.
  ///
  /// A large photo takes long, so the decode runs off the main actor: the screen keeps
  /// drawing meanwhile (its spinner turns). It runs in its caller's task all the same: when
  /// that task is cancelled, it stops before the next row and throws `CancellationError`,
  /// and the file's reads see the caller's task-local values.
  ///
  /// `@concurrent`: a nonisolated async function now runs on its caller's actor (here the
  /// main actor, which the heavy loop would hold for the whole decode); `@concurrent` runs
  /// it on the concurrent pool instead, still as part of the caller's task, so cancellation
  /// and task-local values reach it (which `Task.detached` would lose).
  @concurrent func decode(_ file: some PhotoFile) async throws -> Photo {
    var pixels: [UInt8] = []
    pixels.reserveCapacity(file.width * file.height)
    for row in 0..<file.height {
      try Task.checkCancellation()
      let expanded = Self.expand(try file.readRow())
      guard expanded.count == file.width else { throw PhotoDecodingError.badRow(row) }
      pixels += expanded
    }
    return Photo(width: file.width, height: file.height, pixels: pixels)
  }

  /// `runs` expanded: each pair of a count and a grey value becomes that many pixels.
  static func expand(_ runs: [UInt8]) -> [UInt8] {
    var pixels: [UInt8] = []
    for start in stride(from: 0, to: runs.count - 1, by: 2) {
      pixels += repeatElement(runs[start + 1], count: Int(runs[start]))
    }
    return pixels
  }
}

/// The decoded photos that open viewers show, by name. The app's memory overlay and its
/// memory-pressure handler use it on the main actor, and so do the viewers: it is read and
/// changed on the main actor only.
///
/// UI state: it keeps the module's default isolation, the main actor.
final class PhotoCache {
  private var photos: [String: Photo] = [:]

  /// The photo stored under `name`, if any.
  func photo(named name: String) -> Photo? { photos[name] }

  func store(_ photo: Photo, named name: String) { photos[name] = photo }

  func release(_ name: String) { photos[name] = nil }
}

/// The photo screen's model. It belongs to the main actor: SwiftUI observes its state there,
/// and the state changes there only. The screen's tasks hold it too, so the last reference
/// may go away on any thread.
///
/// It keeps the module's default isolation, the main actor: its state is UI state.
@Observable
final class PhotoViewerModel {
  /// The photo on screen, once decoded.
  private(set) var photo: Photo?
  /// True while a photo decodes: the screen shows a spinner.
  private(set) var isLoading = false

  @ObservationIgnored private let cache: PhotoCache
  @ObservationIgnored private let decoder = PhotoDecoder()
  /// The name under which the photo on screen is in the cache.
  @ObservationIgnored private var name: String?

  init(cache: PhotoCache) {
    self.cache = cache
  }

  /// Decodes the photo in `file`, shows it, and stores it in the cache under `name`;
  /// `isLoading` is true meanwhile. A cancelled or failed decode throws and shows nothing.
  func open(_ file: some PhotoFile, named name: String) async throws {
    isLoading = true
    defer { isLoading = false }
    let photo = try await decoder.decode(file)
    self.photo = photo
    cache.store(photo, named: name)
    self.name = name
  }

  /// Takes the photo out of the cache once the viewer is gone, on the main actor where the
  /// cache lives: right away when the last reference goes on the main actor (the screen
  /// closes), soon after when it goes elsewhere.
  ///
  /// A deinit is nonisolated even in a main-actor class, so it could not call the cache.
  /// `isolated deinit` runs on the class's actor: in place when the last release happens
  /// there, otherwise as a job the runtime sends to the main actor.
  isolated deinit {
    if let name { cache.release(name) }
  }
}
