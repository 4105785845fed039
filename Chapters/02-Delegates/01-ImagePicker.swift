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
    // TODO: Present the picker and return what the user does: the image they pick, or `nil`
    // when they cancel or a newer pick replaces this sheet. Every caller is answered exactly
    // once, however often the picker reports.
    return nil
  }

  func imagePickerController(_ picker: ImagePickerController, didFinishPicking image: Image) {
  }

  func imagePickerControllerDidCancel(_ picker: ImagePickerController) {
  }
}
