// Chapter 1, exercise 1.2: resuming from a Result, the long way and the classic mistake.
import Foundation
import LegacyKit

func label(of image: Data, from classifier: ImageClassifier) async throws -> String {
  try await withCheckedThrowingContinuation { continuation in
    classifier.classify(image) { result in
      // listing: both-cases
      switch result {
      case .success(let label): continuation.resume(returning: label)
      case .failure(let error): continuation.resume(throwing: error)
      }
      // listing: end
    }
  }
}

/// The mistake: a failure never resumes, and the caller waits forever.
func labelOnlyIfRecognised(
  of image: Data, from classifier: ImageClassifier
) async throws -> String {
  try await withCheckedThrowingContinuation { continuation in
    classifier.classify(image) { result in
      // listing: success-only
      if case .success(let label) = result {
        continuation.resume(returning: label)
      }
      // listing: end
    }
  }
}
