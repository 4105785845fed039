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

// The nested callback version is gone: the async function below replaces it.

/// Downloads the image at `url`, then its metadata, and returns both.
///
/// Throws ``GalleryError/imageUnavailable`` if the image download fails (and then does not
/// ask for the metadata), or ``GalleryError/metadataUnavailable`` if the metadata fails.
func loadGalleryItem(_ url: URL, from downloader: ImageDownloader) async throws -> GalleryItem {
  // Straight-line code does what the pyramid did by nesting: the metadata request starts
  // only after the image has arrived, and a thrown error skips everything after it.
  let image = try await downloadImage(from: url, using: downloader)
  let metadata = try await downloadMetadata(for: url, using: downloader)
  return GalleryItem(image: image, metadata: metadata)
}

/// One legacy call, one continuation. Mapping the error here tells the caller which step
/// failed, since both steps report the same `ImageDownloadError`.
private func downloadImage(from url: URL, using downloader: ImageDownloader) async throws -> Data {
  try await withCheckedThrowingContinuation { continuation in
    downloader.downloadImage(from: url) { result in
      continuation.resume(with: result.mapError { _ in GalleryError.imageUnavailable })
    }
  }
}

private func downloadMetadata(
  for url: URL, using downloader: ImageDownloader
) async throws -> ImageMetadata {
  try await withCheckedThrowingContinuation { continuation in
    downloader.downloadMetadata(for: url) { result in
      continuation.resume(with: result.mapError { _ in GalleryError.metadataUnavailable })
    }
  }
}
