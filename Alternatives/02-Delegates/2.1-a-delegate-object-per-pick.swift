import LegacyKit
import Synchronization

/// An async face for an `ImagePickerController` that makes a new delegate object for each
/// pick, instead of being the delegate and storing one continuation itself.
final class ImagePicker: Sendable {
  private let controller: ImagePickerController
  /// The pick whose sheet is on screen, if any. It keeps that pick alive: the controller
  /// holds its delegate weakly.
  private let current = Mutex<Pick?>(nil)

  init(controller: ImagePickerController) {
    self.controller = controller
  }

  func pickImage() async -> Image? {
    let pick = Pick()
    return await pick.wait {
      // The pick on screen and the delegate the controller reports to change in one
      // step, so a pick that comes between two others sees one or the other.
      let replaced = self.current.withLock { current in
        defer { current = pick }
        self.controller.delegate = pick
        return current
      }
      // A replaced sheet never reports: its caller gets nil now.
      replaced?.finish(with: nil)
      self.controller.present()
    }
  }
}

/// One pick: the delegate for a single presentation, and the caller waiting for it.
private final class Pick: ImagePickerControllerDelegate, Sendable {
  private let waiting = Mutex<CheckedContinuation<Image?, Never>?>(nil)

  /// Stores the caller, then runs `start`: a picker may answer inside it.
  func wait(thenStart start: () -> Void) async -> Image? {
    await withCheckedContinuation { continuation in
      waiting.withLock { $0 = continuation }
      start()
    }
  }

  func imagePickerController(_ picker: ImagePickerController, didFinishPicking image: Image) {
    finish(with: image)
  }

  func imagePickerControllerDidCancel(_ picker: ImagePickerController) {
    finish(with: nil)
  }

  /// Resumes the caller once: a second report finds nobody.
  func finish(with image: Image?) {
    waiting.withLock { $0.take() }?.resume(returning: image)
  }
}
