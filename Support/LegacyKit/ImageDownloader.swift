import Foundation

/// Why ``ImageDownloader`` could not deliver something.
public enum ImageDownloadError: Error, Equatable, Sendable {
  /// The server has no such image, or no metadata for it.
  case notFound(URL)
}

/// What an image server reports about one of its images.
public struct ImageMetadata: Equatable, Sendable {
  public var width: Int
  public var height: Int
  public var caption: String

  public init(width: Int, height: Int, caption: String) {
    self.width = width
    self.height = height
    self.caption = caption
  }
}

/// An image download client from before Swift Concurrency: the picture and its metadata
/// are two separate requests, each answering through a completion handler.
///
/// It serves from a catalogue fixed at creation. Each request is recorded in ``events``,
/// and so is each delivery of an answer, so callers can tell what was asked for and in
/// which order. One script times image answers, another metadata answers. The client is
/// thread-safe and serves any number of requests.
public final class ImageDownloader: @unchecked Sendable {
  /// One image on the server; a `nil` part cannot be downloaded and fails with
  /// ``ImageDownloadError/notFound(_:)``.
  public struct Entry: Sendable {
    public var image: Data?
    public var metadata: ImageMetadata?

    public init(image: Data?, metadata: ImageMetadata?) {
      self.image = image
      self.metadata = metadata
    }
  }

  /// Something that happened to the client, in the order it happened.
  public enum Event: Equatable, Sendable, CustomStringConvertible {
    case imageRequested(URL)
    case imageDelivered(URL)
    case metadataRequested(URL)
    case metadataDelivered(URL)

    public var description: String {
      switch self {
      case .imageRequested(let url): return "image of \(url.lastPathComponent) requested"
      case .imageDelivered(let url): return "image of \(url.lastPathComponent) delivered"
      case .metadataRequested(let url): return "metadata of \(url.lastPathComponent) requested"
      case .metadataDelivered(let url): return "metadata of \(url.lastPathComponent) delivered"
      }
    }
  }

  private let catalogue: [URL: Entry]
  private let imageScript: CallbackScript
  private let metadataScript: CallbackScript
  private let lock = NSLock()
  private var recorded: [Event] = []

  /// - Parameters:
  ///   - catalogue: What the server holds; a URL missing here fails both requests.
  ///   - imageScript: When and how image answers are delivered.
  ///   - metadataScript: When and how metadata answers are delivered.
  public init(
    catalogue: [URL: Entry],
    imageScript: CallbackScript = .default,
    metadataScript: CallbackScript = .default
  ) {
    self.catalogue = catalogue
    self.imageScript = imageScript
    self.metadataScript = metadataScript
  }

  /// Every request and delivery so far, oldest first.
  public var events: [Event] {
    lock.lock()
    defer { lock.unlock() }
    return recorded
  }

  /// Downloads the image bytes at `url` and passes them, or the failure, to `completion`.
  public func downloadImage(
    from url: URL, completion: @escaping (Result<Data, ImageDownloadError>) -> Void
  ) {
    record(.imageRequested(url))
    let result: Result<Data, ImageDownloadError> =
      catalogue[url]?.image.map { .success($0) } ?? .failure(.notFound(url))
    imageScript.deliver { [self] in
      record(.imageDelivered(url))
      completion(result)
    }
  }

  /// Downloads the metadata of the image at `url` and passes it, or the failure, to
  /// `completion`.
  public func downloadMetadata(
    for url: URL, completion: @escaping (Result<ImageMetadata, ImageDownloadError>) -> Void
  ) {
    record(.metadataRequested(url))
    let result: Result<ImageMetadata, ImageDownloadError> =
      catalogue[url]?.metadata.map { .success($0) } ?? .failure(.notFound(url))
    metadataScript.deliver { [self] in
      record(.metadataDelivered(url))
      completion(result)
    }
  }

  private func record(_ event: Event) {
    lock.lock()
    defer { lock.unlock() }
    recorded.append(event)
  }
}
