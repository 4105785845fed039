import Dispatch
import Synchronization

// Code from a photo app, written before Swift 6. It builds in the Swift 5 language mode and
// has worked for years; in the Swift 6 mode it does not compile. Make it compile, and keep
// every promise its doc comments make.

/// The count behind `renderedThumbnailCount`. An `Atomic` is safe to share: every thread
/// adds to it in one indivisible step, so no count is lost, and a `let` of a `Sendable`
/// type is global state the compiler can prove safe.
private let renderedThumbnails = Atomic<Int>(0)

/// How many thumbnails the app has rendered since launch, for the debug overlay. Read and
/// counted from any thread, synchronously.
var renderedThumbnailCount: Int {
  renderedThumbnails.load(ordering: .relaxed)
}

/// Counts one rendered thumbnail. The renderer's background queue calls it, and so does
/// main-actor code.
func countRenderedThumbnail() {
  // One read-modify-write, not a load and a store: two threads never count the same one.
  renderedThumbnails.add(1, ordering: .relaxed)
}

/// A rendered thumbnail.
struct Thumbnail: Equatable, Sendable {
  var name: String
  var pixels: [UInt8]
}

/// The app's thumbnails, by photo name, shared by every screen and queue.
///
/// `Sendable` because its only stored property is a `Mutex`: the compiler checks that, so
/// `shared` can be a `static let` that every thread uses.
final class ThumbnailCache: Sendable {
  static let shared = ThumbnailCache()

  private let thumbnails = Mutex<[String: Thumbnail]>([:])

  /// The thumbnail stored for `name`, if any. Called from any thread.
  func thumbnail(named name: String) -> Thumbnail? {
    thumbnails.withLock { $0[name] }
  }

  /// Stores `thumbnail` for `name`, replacing any other. Called from any thread.
  func store(_ thumbnail: Thumbnail, named name: String) {
    thumbnails.withLock { $0[name] = thumbnail }
  }
}

// MARK: The renderer: leave it as it is.

/// Renders the thumbnails of `names` on a background queue, stores and counts each one,
/// then calls `completion` on that queue with all of them.
func renderThumbnails(
  _ names: [String], completion: @escaping @Sendable ([Thumbnail]) -> Void
) {
  DispatchQueue.global().async {
    let thumbnails = names.map { Thumbnail(name: $0, pixels: Array($0.utf8)) }
    for thumbnail in thumbnails {
      ThumbnailCache.shared.store(thumbnail, named: thumbnail.name)
      countRenderedThumbnail()
    }
    completion(thumbnails)
  }
}
