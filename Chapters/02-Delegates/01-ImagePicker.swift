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
    // TODO: Store a continuation in `waiting` and present the picker; resume it from the
    // two delegate methods below. Each continuation is resumed exactly once, and each pick
    // stores a new one: a stored one that will never be answered must not be left behind.
    return nil
  }

  func imagePickerController(_ picker: ImagePickerController, didFinishPicking image: Image) {
  }

  func imagePickerControllerDidCancel(_ picker: ImagePickerController) {
  }
}
