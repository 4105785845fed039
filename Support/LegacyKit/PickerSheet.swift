import Foundation

/// What the simulated user does with a picker that is on screen.
public enum PickerAnswer<Choice> {
  /// Chooses something: the picker reports the choice to its delegate.
  case choose(Choice)
  /// Taps Cancel: the picker reports that it was cancelled.
  case cancel
  /// Walks away (switches apps, locks the phone, swipes the sheet down): the picker
  /// reports nothing at all, ever.
  case walkAway
}

extension PickerAnswer: Sendable where Choice: Sendable {}

extension PickerAnswer {
  /// True for ``walkAway``, the answer that reports nothing.
  var isWalkAway: Bool {
    if case .walkAway = self { return true }
    return false
  }
}

extension PickerAnswer: CustomStringConvertible {
  public var description: String {
    switch self {
    case .choose(let choice): return "choose \(choice)"
    case .cancel: return "cancel"
    case .walkAway: return "walk away"
    }
  }
}

/// The bookkeeping the simulated pickers share: which presentation is on screen, what the
/// simulated user does with each one, and how many delegate calls have been made.
///
/// Each presentation takes the next scripted answer; once one is left, it is used for every
/// further presentation. Presenting again replaces a sheet still on screen, and a replaced
/// sheet never reports. The script decides when, on which thread and how many times the
/// delegate hears the answer (`times: 2` reports the same answer twice, as buggy pickers do).
final class PickerSheet<Choice> {
  private let lock = NSLock()
  private let script: CallbackScript
  private var answers: [PickerAnswer<Choice>]
  private var onScreen: Int?
  private var presentations = 0
  private var reports = 0

  init(answers: [PickerAnswer<Choice>], script: CallbackScript) {
    precondition(!answers.isEmpty, "script at least one answer for the simulated user")
    self.answers = answers
    self.script = script
  }

  var presentationCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return presentations
  }

  var isPresented: Bool {
    lock.lock()
    defer { lock.unlock() }
    return onScreen != nil
  }

  var reportCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return reports
  }

  /// Puts a new sheet on screen and has the user answer it: `report` is called once per
  /// delegate call the script asks for, never while the lock is held.
  func present(report: @escaping (PickerAnswer<Choice>) -> Void) {
    lock.lock()
    presentations += 1
    let id = presentations
    onScreen = id
    let answer = answers.count > 1 ? answers.removeFirst() : answers[0]
    lock.unlock()

    if case .walkAway = answer { return }
    var isFirstCall = true
    var stillOnScreen = false
    script.deliver {
      // The script calls this closure `times` times in a row, on one thread.
      if isFirstCall {
        isFirstCall = false
        self.lock.lock()
        stillOnScreen = self.onScreen == id
        if stillOnScreen { self.onScreen = nil }
        self.lock.unlock()
      }
      // A sheet that was replaced by a newer presentation is gone: nobody answers it.
      guard stillOnScreen else { return }
      report(answer)
      self.lock.lock()
      self.reports += 1
      self.lock.unlock()
    }
  }
}
