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
    // TODO: Bridge the picker as in 2.1: return the contact the user selects, or `nil` when
    // they cancel or a newer pick replaces the sheet. Every caller is answered exactly once.
    return nil
  }

  func contactPicker(_ picker: ContactPickerViewController, didSelect contact: Contact) {
  }
}
