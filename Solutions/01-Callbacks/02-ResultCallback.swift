import Foundation
import LegacyKit

// The callback way:
//
//     classifier.classify(photo) { result in
//       switch result {
//       case .success(let label): show(label)
//       case .failure(let error): report(error)
//       }
//     }

/// Returns the label `classifier` gives `image`, or throws the error it reports instead.
func classify(_ image: Data, using classifier: ImageClassifier) async throws -> String {
  try await withCheckedThrowingContinuation { continuation in
    classifier.classify(image) { result in
      // `resume(with:)` covers both cases at once: `.success` returns the label and
      // `.failure` throws the error, so no path can leave the caller suspended.
      continuation.resume(with: result)
    }
  }
}
