import LegacyKit
import Synchronization

/// An async face for a `ContactPickerViewController` that makes a new delegate object for each
/// pick, instead of being the delegate and storing one continuation itself.
final class ContactPicker: Sendable {
  private let controller: ContactPickerViewController
  /// The pick whose sheet is on screen, if any. It keeps that pick alive: the controller
  /// holds its delegate weakly.
  private let current = Mutex<Pick?>(nil)

  init(controller: ContactPickerViewController) {
    self.controller = controller
  }

  func pickContact() async -> Contact? {
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
private final class Pick: ContactPickerDelegate, Sendable {
  private let waiting = Mutex<CheckedContinuation<Contact?, Never>?>(nil)

  /// Stores the caller, then runs `start`: a picker may answer inside it.
  func wait(thenStart start: () -> Void) async -> Contact? {
    await withCheckedContinuation { continuation in
      waiting.withLock { $0 = continuation }
      start()
    }
  }

  func contactPicker(_ picker: ContactPickerViewController, didSelect contact: Contact) {
    finish(with: contact)
  }

  func contactPickerDidCancel(_ picker: ContactPickerViewController) {
    finish(with: nil)
  }

  /// Resumes the caller once: a second report finds nobody.
  func finish(with contact: Contact?) {
    waiting.withLock { $0.take() }?.resume(returning: contact)
  }
}
