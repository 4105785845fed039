// Chapter 3, exercise 3.1: a guard that "does nothing" in a handler leaks the continuation,
// and the same handler with every way out resuming once.
import Foundation
import LegacyKit

/// An old thumbnail cache that answers (data, nil), (nil, error) or (nil, nil) for a miss.
final class ThumbnailCache: @unchecked Sendable {
  private let stored: [String: Data]

  init(stored: [String: Data]) {
    self.stored = stored
  }

  func thumbnail(forKey key: String, completion: @escaping (Data?, Error?) -> Void) {
    let data = stored[key]
    CallbackScript.default.deliver { completion(data, nil) }
  }
}

// listing: leaky
func thumbnail(forKey key: String, from cache: ThumbnailCache) async throws -> Data? {
  try await withCheckedThrowingContinuation { continuation in
    cache.thumbnail(forKey: key) { data, error in
      if let error {
        continuation.resume(throwing: error)
        return
      }
      guard let data else { return }  // a miss: "nothing to do", and nobody resumes
      continuation.resume(returning: data)
    }
  }
}
// listing: end

func cachedThumbnail(forKey key: String, from cache: ThumbnailCache) async throws -> Data? {
  try await withCheckedThrowingContinuation { continuation in
    cache.thumbnail(forKey: key) { data, error in
      // listing: fixed
      if let error {
        continuation.resume(throwing: error)
        return
      }
      guard let data else {
        continuation.resume(returning: nil)  // a miss is an answer too
        return
      }
      continuation.resume(returning: data)
      // listing: end
    }
  }
}
