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
    // TODO: Bridge the picker as you did in 2.1: store a continuation, present, and resume
    // it from the delegate. Make sure every way the user can end the pick resumes it.
    return nil
  }

  func contactPicker(_ picker: ContactPickerViewController, didSelect contact: Contact) {
  }
}
