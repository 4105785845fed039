import Dispatch

// Code from a photo app, written before Swift 6. It builds in the Swift 5 language mode and
// has worked for years; in the Swift 6 mode it does not compile. Make it compile, and keep
// every promise its doc comments make.

/// How many thumbnails the app has rendered since launch, for the debug overlay. Read and
/// counted from any thread, synchronously.
var renderedThumbnailCount = 0

/// Counts one rendered thumbnail. The renderer's background queue calls it, and so does
/// main-actor code.
func countRenderedThumbnail() {
  renderedThumbnailCount += 1
}

/// A rendered thumbnail.
struct Thumbnail: Equatable, Sendable {
  var name: String
  var pixels: [UInt8]
}

/// The app's thumbnails, by photo name, shared by every screen and queue.
final class ThumbnailCache {
  static var shared = ThumbnailCache()

  private var thumbnails: [String: Thumbnail] = [:]

  /// The thumbnail stored for `name`, if any. Called from any thread.
  func thumbnail(named name: String) -> Thumbnail? {
    thumbnails[name]
  }

  /// Stores `thumbnail` for `name`, replacing any other. Called from any thread.
  func store(_ thumbnail: Thumbnail, named name: String) {
    thumbnails[name] = thumbnail
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
