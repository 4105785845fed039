import LegacyKit
import Synchronization

// The delegate way:
//
//     final class ShareViewController: ContactPickerDelegate {
//       func chooseRecipientTapped() {
//         contactPicker.delegate = self
//         contactPicker.present()
//       }
//       func contactPicker(_ picker: ContactPickerViewController, didSelect contact: Contact) {
//         recipient = contact
//       }
//     }

/// An async face for a `ContactPickerViewController`.
final class ContactPicker: ContactPickerDelegate, Sendable {
  private let controller: ContactPickerViewController
  private let waiting = Mutex<CheckedContinuation<Contact?, Never>?>(nil)

  init(controller: ContactPickerViewController) {
    self.controller = controller
    controller.delegate = self
  }

  /// Presents the picker and returns the contact the user selects, or `nil` if they cancel.
  func pickContact() async -> Contact? {
    await withCheckedContinuation { continuation in
      let replaced = waiting.withLock { stored in
        let previous = stored.take()
        stored = continuation
        return previous
      }
      replaced?.resume(returning: nil)
      controller.present()
    }
  }

  func contactPicker(_ picker: ContactPickerViewController, didSelect contact: Contact) {
    waiting.withLock { $0.take() }?.resume(returning: contact)
  }

  // The protocol gives this method a default implementation that does nothing, so the
  // compiler is just as happy without it, and a cancelled pick would then never return.
  // Implementing the optional methods is part of the bridge whenever they end an operation.
  func contactPickerDidCancel(_ picker: ContactPickerViewController) {
    waiting.withLock { $0.take() }?.resume(returning: nil)
  }
}
