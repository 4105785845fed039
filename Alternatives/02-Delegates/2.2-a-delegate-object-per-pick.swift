import LegacyKit
import Synchronization

/// An async face for a `ContactPickerViewController` that makes a new delegate object for each
/// pick, instead of being the delegate and storing one continuation itself.
final class ContactPicker: Sendable {
  private let controller: ContactPickerViewController

  init(controller: ContactPickerViewController) {
    self.controller = controller
  }

  func pickContact() async -> Contact? {
    // The controller holds its delegate weakly; awaiting a method of `pick` keeps it alive.
    let pick = Pick()
    return await pick.run(on: controller)
  }
}

/// One pick: the delegate for a single presentation, and the caller waiting for it.
private final class Pick: ContactPickerDelegate, Sendable {
  private let waiting = Mutex<CheckedContinuation<Contact?, Never>?>(nil)

  func run(on controller: ContactPickerViewController) async -> Contact? {
    await withCheckedContinuation { continuation in
      waiting.withLock { $0 = continuation }
      // A pick still on screen is about to be replaced, and a replaced sheet never reports.
      (controller.delegate as? Pick)?.finish(with: nil)
      controller.delegate = self
      controller.present()
    }
  }

  func contactPicker(_ picker: ContactPickerViewController, didSelect contact: Contact) {
    finish(with: contact)
  }

  // Optional in the protocol, and needed: a cancelled pick must return too.
  func contactPickerDidCancel(_ picker: ContactPickerViewController) {
    finish(with: nil)
  }

  func finish(with contact: Contact?) {
    waiting.withLock { $0.take() }?.resume(returning: contact)
  }
}
