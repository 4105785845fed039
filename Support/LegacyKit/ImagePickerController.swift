import Foundation

/// The delegate of an ``ImagePickerController``: told once what the user did with the picker.
public protocol ImagePickerControllerDelegate: AnyObject {
  /// The user picked `image`; the picker has dismissed itself.
  func imagePickerController(_ picker: ImagePickerController, didFinishPicking image: Image)
  /// The user tapped Cancel; the picker has dismissed itself.
  func imagePickerControllerDidCancel(_ picker: ImagePickerController)
}

/// A photo-library picker in the UIKit style: you present it, and it tells its delegate what
/// the user picked, or that they cancelled.
///
/// Like UIKit, it holds its ``delegate`` weakly: something else must keep the delegate
/// alive. It shows one sheet at a time; calling ``present()`` while a sheet is on screen
/// replaces that sheet, and the replaced sheet never reports anything. If the user walks
/// away, the delegate hears nothing.
///
/// The simulated user answers each presentation with the next of its scripted ``Answer``s
/// (the last one repeats), and the script decides when, on which thread and how many times
/// the delegate is told. Thread-safe; it can be presented any number of times.
public final class ImagePickerController: @unchecked Sendable {
  public typealias Answer = PickerAnswer<Image>

  private let sheet: PickerSheet<Image>
  private let lock = NSLock()
  private var answersToNoDelegate = 0
  private weak var storedDelegate: ImagePickerControllerDelegate?

  /// - Parameters:
  ///   - answers: What the user does with each presentation, in order; the last repeats.
  ///   - script: When, on which thread and how many times the delegate hears each answer.
  public init(answers: [Answer], script: CallbackScript = .default) {
    sheet = PickerSheet(answers: answers, script: script)
  }

  /// Told what the user did. Held weakly, as UIKit does.
  public var delegate: ImagePickerControllerDelegate? {
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

  /// How many times ``present()`` has been called.
  public var presentationCount: Int { sheet.presentationCount }

  /// Whether a sheet is on screen, waiting for the user.
  public var isPresented: Bool { sheet.isPresented }

  /// How many delegate calls have been made and have returned.
  public var reportCount: Int { sheet.reportCount }

  /// Shows the picker, replacing a sheet that is still on screen. The answer goes to
  /// whatever ``delegate`` is set when it arrives.
  public func present() {
    sheet.present { answer in
      let delegate = self.delegate
      if delegate == nil, !answer.isWalkAway {
        self.lock.lock()
        self.answersToNoDelegate += 1
        self.lock.unlock()
      }
      switch answer {
      case .choose(let image): delegate?.imagePickerController(self, didFinishPicking: image)
      case .cancel: delegate?.imagePickerControllerDidCancel(self)
      case .walkAway: break
      }
    }
  }
}
