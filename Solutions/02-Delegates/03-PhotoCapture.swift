import Foundation
import LegacyKit
import Synchronization

// The processor used to store a completion closure, and every failure looked the same:
//
//     final class PhotoCaptureProcessor: PhotoCaptureDelegate {
//       private var completion: ((Image?) -> Void)?
//
//       func capturePhoto(with output: PhotoOutput, completion: @escaping (Image?) -> Void) {
//         self.completion = completion
//         output.capturePhoto(delegate: self)
//       }
//
//       func photoOutput(
//         _ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto, error: Error?
//       ) {
//         guard error == nil, let data = photo.fileDataRepresentation(),
//           let image = Image(fileData: data)
//         else {
//           completion?(nil)  // Which of the three went wrong? Nobody will ever know.
//           return
//         }
//         completion?(image)
//       }
//     }

/// Why `PhotoCaptureProcessor.capturePhoto(with:)` has no image, when the camera itself
/// reported no error. (When it did, that `CameraError` is thrown as it is.)
enum PhotoCaptureError: Error, Equatable {
  /// The capture ended without an error, but also without a file.
  case noData
  /// A file came, but it is not an image.
  case undecodableData
}

/// Takes photos with a `PhotoOutput` and returns them as images.
final class PhotoCaptureProcessor: PhotoCaptureDelegate, Sendable {
  /// The callers waiting for a photo, oldest first: stored continuations replace the stored
  /// completion closure, and throwing replaces `nil`. A list, not a single slot: captures
  /// may overlap, and a second one must not push the first caller out.
  private let waiting = Mutex<[CheckedContinuation<Image, any Error>]>([])

  /// Captures one photo and returns it, or throws why there is none: the camera's
  /// `CameraError`, or a `PhotoCaptureError`.
  ///
  /// Captures may overlap. Each report answers the caller who has waited longest: two photos
  /// taken at the same moment are as good as each other.
  func capturePhoto(with output: PhotoOutput) async throws -> Image {
    // The output holds its delegate weakly. `self` stays alive while this method is
    // suspended, because the caller holds the processor for the whole call.
    try await withCheckedThrowingContinuation { continuation in
      // Store before capturing: a camera may report before `capturePhoto` even returns.
      waiting.withLock { $0.append(continuation) }
      output.capturePhoto(delegate: self)
    }
  }

  func photoOutput(
    _ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto, error: (any Error)?
  ) {
    // Take the oldest continuation out first: a repeated report that comes once every caller
    // has been answered finds nothing.
    guard let continuation = waiting.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
      return
    }
    continuation.resume(with: Self.outcome(of: photo, error: error))
  }

  /// One case per way a capture can end, each with its own error. The error is checked
  /// first: a file that comes with an error is not to be trusted.
  private static func outcome(
    of photo: CapturedPhoto, error: (any Error)?
  ) -> Result<Image, any Error> {
    if let error {
      return .failure(error)
    }
    guard let data = photo.fileDataRepresentation() else {
      return .failure(PhotoCaptureError.noData)
    }
    guard let image = Image(fileData: data) else {
      return .failure(PhotoCaptureError.undecodableData)
    }
    return .success(image)
  }
}
