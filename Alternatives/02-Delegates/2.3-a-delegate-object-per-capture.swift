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

/// Takes photos with a `PhotoOutput` and returns them as images. Each capture gets a delegate
/// object of its own, so overlapping captures never share a stored continuation.
final class PhotoCaptureProcessor: Sendable {
  func capturePhoto(with output: PhotoOutput) async throws -> Image {
    // The output holds the delegate weakly; awaiting a method of `capture` keeps it alive.
    let capture = Capture()
    return try await capture.run(with: output)
  }
}

/// One capture: its delegate, and the caller waiting for it.
private final class Capture: PhotoCaptureDelegate, Sendable {
  private let waiting = Mutex<CheckedContinuation<Image, any Error>?>(nil)

  func run(with output: PhotoOutput) async throws -> Image {
    try await withCheckedThrowingContinuation { continuation in
      waiting.withLock { $0 = continuation }
      output.capturePhoto(delegate: self)
    }
  }

  func photoOutput(
    _ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto, error: (any Error)?
  ) {
    guard let continuation = waiting.withLock({ $0.take() }) else { return }
    if let error {
      continuation.resume(throwing: error)
    } else if let data = photo.fileDataRepresentation() {
      if let image = Image(fileData: data) {
        continuation.resume(returning: image)
      } else {
        continuation.resume(throwing: PhotoCaptureError.undecodableData)
      }
    } else {
      continuation.resume(throwing: PhotoCaptureError.noData)
    }
  }
}
