import Foundation
import LegacyKit

/// An async face for an `ImagePickerController`, with an `NSLock` around a stored
/// continuation instead of a `Mutex`: the class promises its own thread safety.
final class ImagePicker: ImagePickerControllerDelegate, @unchecked Sendable {
  private let controller: ImagePickerController
  private let lock = NSLock()
  /// The caller waiting for the user, if any. Guarded by `lock`.
  private var waiting: CheckedContinuation<Image?, Never>?

  init(controller: ImagePickerController) {
    self.controller = controller
    controller.delegate = self
  }

  func pickImage() async -> Image? {
    await withCheckedContinuation { continuation in
      lock.lock()
      let replaced = waiting
      waiting = continuation
      lock.unlock()
      // The sheet on screen, if any, is replaced and will never report.
      replaced?.resume(returning: nil)
      controller.present()
    }
  }

  func imagePickerController(_ picker: ImagePickerController, didFinishPicking image: Image) {
    takeWaiting()?.resume(returning: image)
  }

  func imagePickerControllerDidCancel(_ picker: ImagePickerController) {
    takeWaiting()?.resume(returning: nil)
  }

  private func takeWaiting() -> CheckedContinuation<Image?, Never>? {
    lock.lock()
    defer { lock.unlock() }
    let continuation = waiting
    waiting = nil
    return continuation
  }
}
