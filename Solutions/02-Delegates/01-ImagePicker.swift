import LegacyKit
import Synchronization

// The delegate way:
//
//     final class ProfileViewController: ImagePickerControllerDelegate {
//       func changePhotoTapped() {
//         picker.delegate = self
//         picker.present()
//       }
//       func imagePickerController(_ picker: ImagePickerController, didFinishPicking image: Image)
//       {
//         avatar = image
//       }
//       func imagePickerControllerDidCancel(_ picker: ImagePickerController) {}
//     }

/// An async face for an `ImagePickerController`: `let image = await picker.pickImage()`.
final class ImagePicker: ImagePickerControllerDelegate, Sendable {
  private let controller: ImagePickerController
  /// The caller waiting for the user, if any. Delegate calls arrive on any thread, so every
  /// access goes through the lock.
  private let waiting = Mutex<CheckedContinuation<Image?, Never>?>(nil)

  init(controller: ImagePickerController) {
    self.controller = controller
    // The controller holds its delegate weakly; whoever owns this picker keeps it alive.
    controller.delegate = self
  }

  /// Presents the picker and returns the image the user picks, or `nil` if they cancel.
  ///
  /// Presenting again replaces a sheet that is still on screen, and a replaced sheet never
  /// reports, so its caller gets `nil` then.
  func pickImage() async -> Image? {
    await withCheckedContinuation { continuation in
      // Store before presenting: a picker may answer before `present()` even returns.
      let replaced = waiting.withLock { stored in
        let previous = stored.take()
        stored = continuation
        return previous
      }
      // Nobody will ever answer the sheet we are about to replace: resume its caller now
      // rather than overwrite (and leak) its continuation.
      replaced?.resume(returning: nil)
      // Present outside the lock: a synchronous answer calls the delegate methods below,
      // which take the lock themselves.
      controller.present()
    }
  }

  func imagePickerController(_ picker: ImagePickerController, didFinishPicking image: Image) {
    finish(with: image)
  }

  func imagePickerControllerDidCancel(_ picker: ImagePickerController) {
    finish(with: nil)
  }

  /// Resumes the waiting caller, if there is one. `take()` empties the slot in the same
  /// step, so a second report for the same pick finds nothing to resume and is ignored.
  private func finish(with image: Image?) {
    waiting.withLock { $0.take() }?.resume(returning: image)
  }
}
