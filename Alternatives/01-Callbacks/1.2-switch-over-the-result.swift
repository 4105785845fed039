import Foundation
import LegacyKit

/// Returns the label `classifier` gives `image`, or throws the error it reports instead.
func classify(_ image: Data, using classifier: ImageClassifier) async throws -> String {
  try await withCheckedThrowingContinuation { continuation in
    classifier.classify(image) { result in
      switch result {
      case .success(let label):
        continuation.resume(returning: label)
      case .failure(let error):
        continuation.resume(throwing: error)
      }
    }
  }
}
