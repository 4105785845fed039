import Foundation
import LegacyKit

/// What the gallery shows for one picture.
struct GalleryItem: Equatable, Sendable {
  var image: Data
  var metadata: ImageMetadata
}

/// Why a gallery item could not be loaded: each step has its own error.
enum GalleryError: Error, Equatable {
  case imageUnavailable
  case metadataUnavailable
}

/// Downloads the image at `url`, then its metadata, and returns both.
func loadGalleryItem(_ url: URL, from downloader: ImageDownloader) async throws -> GalleryItem {
  let image = try await awaitResult(failingWith: .imageUnavailable) { completion in
    downloader.downloadImage(from: url, completion: completion)
  }
  let metadata = try await awaitResult(failingWith: .metadataUnavailable) { completion in
    downloader.downloadMetadata(for: url, completion: completion)
  }
  return GalleryItem(image: image, metadata: metadata)
}

/// One bridge for every `(Result<Value, ImageDownloadError>) -> Void` call: waits for the
/// result and turns a failure into `error`.
private func awaitResult<Value: Sendable>(
  failingWith error: GalleryError,
  _ start: (@escaping (Result<Value, ImageDownloadError>) -> Void) -> Void
) async throws -> Value {
  try await withCheckedThrowingContinuation { continuation in
    start { result in
      continuation.resume(with: result.mapError { _ in error })
    }
  }
}
