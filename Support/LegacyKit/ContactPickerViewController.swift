import Foundation

/// An entry of the address book.
public struct Contact: Hashable, Sendable, CustomStringConvertible {
  public var name: String
  public var phoneNumber: String

  public init(name: String, phoneNumber: String) {
    self.name = name
    self.phoneNumber = phoneNumber
  }

  public var description: String { "Contact(\"\(name)\", \(phoneNumber))" }
}

/// The delegate of a ``ContactPickerViewController``.
public protocol ContactPickerDelegate: AnyObject {
  /// The user selected `contact`; the picker has dismissed itself.
  func contactPicker(_ picker: ContactPickerViewController, didSelect contact: Contact)
  /// The user tapped Cancel; the picker has dismissed itself.
  ///
  /// Optional, as in the Contacts framework: the default implementation does nothing.
  func contactPickerDidCancel(_ picker: ContactPickerViewController)
}

extension ContactPickerDelegate {
  /// Does nothing. Implement it if you need to know that the user cancelled.
  public func contactPickerDidCancel(_ picker: ContactPickerViewController) {
    // Counted, so that a test can tell "you never implemented it" from "yours ran".
    picker.countCancelHeardByTheDefault()
  }
}

/// An address-book picker in the ContactsUI style: present it, and it tells its delegate
/// which contact the user selected, or, if the delegate implements the optional method,
/// that the user cancelled.
///
/// It holds its ``delegate`` weakly. It shows one sheet at a time; presenting again replaces
/// a sheet still on screen, which then never reports. If the user walks away, the delegate
/// hears nothing.
///
/// The simulated user answers each presentation with the next of its scripted ``Answer``s
/// (the last one repeats), and the script decides when, on which thread and how many times
/// the delegate is told. Thread-safe; it can be presented any number of times.
public final class ContactPickerViewController: @unchecked Sendable {
  public typealias Answer = PickerAnswer<Contact>

  private let sheet: PickerSheet<Contact>
  private let lock = NSLock()
  private var answersToNoDelegate = 0
  private var cancelsToTheDefault = 0
  private weak var storedDelegate: ContactPickerDelegate?

  /// - Parameters:
  ///   - answers: What the user does with each presentation, in order; the last repeats.
  ///   - script: When, on which thread and how many times the delegate hears each answer.
  public init(answers: [Answer], script: CallbackScript = .default) {
    sheet = PickerSheet(answers: answers, script: script)
  }

  /// Told what the user did. Held weakly.
  public var delegate: ContactPickerDelegate? {
    get {
      lock.lock()
      defer { lock.unlock() }
      return storedDelegate
    }
    set {
      lock.lock()
      defer { lock.unlock() }
      storedDelegate = newValue
    }
  }

  /// How many answers (a pick or a cancel) found no ``delegate`` to tell: it had been freed,
  /// or was never set.
  public var reportsWithNoDelegate: Int {
    lock.lock()
    defer { lock.unlock() }
    return answersToNoDelegate
  }

  /// How many cancels reached the protocol's do-nothing default of
  /// ``ContactPickerDelegate/contactPickerDidCancel(_:)``: the delegate does not implement
  /// it (or implements a method of another signature, which is not the same method).
  public var cancelsHeardByTheDefault: Int {
    lock.lock()
    defer { lock.unlock() }
    return cancelsToTheDefault
  }

  func countCancelHeardByTheDefault() {
    lock.lock()
    cancelsToTheDefault += 1
    lock.unlock()
  }

  /// How many times ``present()`` has been called.
  public var presentationCount: Int { sheet.presentationCount }

  /// Whether a sheet is on screen, waiting for the user.
  public var isPresented: Bool { sheet.isPresented }

  /// How many delegate calls have been made and have returned (a cancel counts even when
  /// the delegate does not implement the optional method).
  public var reportCount: Int { sheet.reportCount }

  /// Shows the picker, replacing a sheet that is still on screen.
  public func present() {
    sheet.present { answer in
      let delegate = self.delegate
      if delegate == nil, !answer.isWalkAway {
        self.lock.lock()
        self.answersToNoDelegate += 1
        self.lock.unlock()
      }
      switch answer {
      case .choose(let contact): delegate?.contactPicker(self, didSelect: contact)
      case .cancel: delegate?.contactPickerDidCancel(self)
      case .walkAway: break
      }
    }
  }
}
