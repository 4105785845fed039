import LegacyKit
import Synchronization

/// An async face for an `ImagePickerController` that makes a new delegate object for each
/// pick, instead of being the delegate and storing one continuation itself.
final class ImagePicker: Sendable {
  private let controller: ImagePickerController

  init(controller: ImagePickerController) {
    self.controller = controller
  }

  func pickImage() async -> Image? {
    // The controller holds its delegate weakly; awaiting a method of `pick` keeps it alive.
    let pick = Pick()
    return await pick.run(on: controller)
  }
}

/// One pick: the delegate for a single presentation, and the caller waiting for it.
private final class Pick: ImagePickerControllerDelegate, Sendable {
  private let waiting = Mutex<CheckedContinuation<Image?, Never>?>(nil)

  func run(on controller: ImagePickerController) async -> Image? {
    await withCheckedContinuation { continuation in
      waiting.withLock { $0 = continuation }
      // A pick still on screen is about to be replaced, and a replaced sheet never reports.
      (controller.delegate as? Pick)?.finish(with: nil)
      controller.delegate = self
      controller.present()
    }
  }

  func imagePickerController(_ picker: ImagePickerController, didFinishPicking image: Image) {
    finish(with: image)
  }

  func imagePickerControllerDidCancel(_ picker: ImagePickerController) {
    finish(with: nil)
  }

  func finish(with image: Image?) {
    waiting.withLock { $0.take() }?.resume(returning: image)
  }
}
