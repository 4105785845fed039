import Foundation

/// Why ``ImageClassifier`` could not label an image.
public enum ClassificationError: Error, Equatable, Sendable {
  /// The bytes are not an image at all (the classifier was handed no data).
  case unreadableImage
  /// The image is fine, but the model has never seen anything like it.
  case unrecognised
}

/// An on-device image classifier in the pre-concurrency style: it reports its answer as a
/// `Result` passed to a completion handler.
///
/// This toy model knows exactly the images it was built with and labels those; any other
/// image is ``ClassificationError/unrecognised`` and empty data is
/// ``ClassificationError/unreadableImage``. It is thread-safe, serves any number of
/// requests, and its script decides when, on which thread and how often the handler runs.
public final class ImageClassifier: @unchecked Sendable {
  private let knownImages: [Data: String]
  private let script: CallbackScript
  private let lock = NSLock()
  private var requests = 0
  private var answers = 0

  /// - Parameters:
  ///   - knownImages: The label for each image the model recognises.
  ///   - script: When and how the completion handler is called.
  public init(knownImages: [Data: String], script: CallbackScript = .default) {
    self.knownImages = knownImages
    self.script = script
  }

  /// How many images have been handed to ``classify(_:completion:)`` so far.
  public var requestCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return requests
  }

  /// How many times a completion handler has been called so far (a script may call one
  /// twice).
  public var answerCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return answers
  }

  /// Labels `image` and passes the label, or the reason there is none, to `completion`.
  public func classify(
    _ image: Data, completion: @escaping (Result<String, ClassificationError>) -> Void
  ) {
    lock.lock()
    requests += 1
    lock.unlock()
    let result: Result<String, ClassificationError>
    if image.isEmpty {
      result = .failure(.unreadableImage)
    } else if let label = knownImages[image] {
      result = .success(label)
    } else {
      result = .failure(.unrecognised)
    }
    script.deliver {
      self.lock.lock()
      self.answers += 1
      self.lock.unlock()
      completion(result)
    }
  }
}
