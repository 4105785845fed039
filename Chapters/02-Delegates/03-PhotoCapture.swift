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
  /// Captures one photo and returns it, or throws why there is none: the camera's
  /// `CameraError`, or a `PhotoCaptureError`.
  func capturePhoto(with output: PhotoOutput) async throws -> Image {
    // TODO: Capture one photo and return it, or throw the error that says why there is none
    // (see `PhotoCaptureError`). Captures may overlap, and every caller is answered exactly
    // once.
    throw Unfinished()
  }

  func photoOutput(
    _ output: PhotoOutput, didFinishProcessingPhoto photo: CapturedPhoto, error: (any Error)?
  ) {
  }
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
