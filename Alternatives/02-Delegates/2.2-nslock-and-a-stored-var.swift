import Foundation
import LegacyKit

/// An async face for a `ContactPickerViewController`, with an `NSLock` around a stored
/// continuation instead of a `Mutex`.
final class ContactPicker: ContactPickerDelegate, @unchecked Sendable {
  private let controller: ContactPickerViewController
  private let lock = NSLock()
  /// The caller waiting for the user, if any. Guarded by `lock`.
  private var waiting: CheckedContinuation<Contact?, Never>?

  init(controller: ContactPickerViewController) {
    self.controller = controller
    controller.delegate = self
  }

  func pickContact() async -> Contact? {
    await withCheckedContinuation { continuation in
      lock.lock()
      let replaced = waiting
      waiting = continuation
      lock.unlock()
      replaced?.resume(returning: nil)
      controller.present()
    }
  }

  func contactPicker(_ picker: ContactPickerViewController, didSelect contact: Contact) {
    takeWaiting()?.resume(returning: contact)
  }

  func contactPickerDidCancel(_ picker: ContactPickerViewController) {
    takeWaiting()?.resume(returning: nil)
  }

  private func takeWaiting() -> CheckedContinuation<Contact?, Never>? {
    lock.lock()
    defer { lock.unlock() }
    let continuation = waiting
    waiting = nil
    return continuation
  }
}
