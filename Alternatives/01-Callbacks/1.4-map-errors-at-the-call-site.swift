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
  // The helpers pass on the downloader's own error; each step says here what its failure
  // means for the gallery.
  let image: Data
  do {
    image = try await downloader.image(from: url)
  } catch {
    throw GalleryError.imageUnavailable
  }
  do {
    return GalleryItem(image: image, metadata: try await downloader.metadata(for: url))
  } catch {
    throw GalleryError.metadataUnavailable
  }
}

extension ImageDownloader {
  fileprivate func image(from url: URL) async throws -> Data {
    try await withCheckedThrowingContinuation { continuation in
      downloadImage(from: url) { continuation.resume(with: $0) }
    }
  }

  fileprivate func metadata(for url: URL) async throws -> ImageMetadata {
    try await withCheckedThrowingContinuation { continuation in
      downloadMetadata(for: url) { continuation.resume(with: $0) }
    }
  }
}
