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

/// The callback version: the metadata request nests inside the image handler, and every
/// failure must remember to call `completion`.
func loadGalleryItem(
  _ url: URL,
  from downloader: ImageDownloader,
  completion: @escaping (Result<GalleryItem, GalleryError>) -> Void
) {
  downloader.downloadImage(from: url) { imageResult in
    switch imageResult {
    case .failure:
      completion(.failure(.imageUnavailable))
    case .success(let image):
      downloader.downloadMetadata(for: url) { metadataResult in
        switch metadataResult {
        case .failure:
          completion(.failure(.metadataUnavailable))
        case .success(let metadata):
          completion(.success(GalleryItem(image: image, metadata: metadata)))
        }
      }
    }
  }
}

/// Downloads the image at `url`, then its metadata, and returns both.
///
/// Throws ``GalleryError/imageUnavailable`` if the image download fails (and then does not
/// ask for the metadata), or ``GalleryError/metadataUnavailable`` if the metadata fails.
func loadGalleryItem(_ url: URL, from downloader: ImageDownloader) async throws -> GalleryItem {
  // TODO: Do what the callback version above does, as straight-line async code: the image
  // first, the metadata only once the image has arrived, and each step's own error.
  throw Unfinished()
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
