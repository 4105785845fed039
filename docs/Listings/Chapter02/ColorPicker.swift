// Chapter 2, "The idea": a one-shot delegate, and a class that parks the continuation
// until the delegate answers.
import LegacyKit
import Synchronization

struct Color: Sendable, Equatable {
  var red: Double, green: Double, blue: Double
}

// listing: delegate
protocol ColorPickerDelegate: AnyObject {
  func colorPicker(_ picker: ColorPicker, didChoose color: Color)
  func colorPickerDidCancel(_ picker: ColorPicker)
}
// listing: end

/// The old drawing SDK's picker: it reports to a weakly held delegate, from its own queue.
final class ColorPicker: @unchecked Sendable {
  weak var delegate: ColorPickerDelegate?
  var choice: Color? = Color(red: 1, green: 0.5, blue: 0)

  func present() {
    let choice = self.choice
    CallbackScript.default.deliver { [weak self] in
      guard let self else { return }
      if let choice {
        self.delegate?.colorPicker(self, didChoose: choice)
      } else {
        self.delegate?.colorPickerDidCancel(self)
      }
    }
  }
}

// listing: bridge
final class AsyncColorPicker: ColorPickerDelegate, Sendable {
  private let picker: ColorPicker
  private let waiting = Mutex<CheckedContinuation<Color?, Never>?>(nil)

  init(picker: ColorPicker) {
    self.picker = picker
    picker.delegate = self
  }

  func chooseColor() async -> Color? {
    await withCheckedContinuation { continuation in
      waiting.withLock { $0 = continuation }
      picker.present()
    }
  }

  func colorPicker(_ picker: ColorPicker, didChoose color: Color) {
    waiting.withLock { $0.take() }?.resume(returning: color)
  }

  func colorPickerDidCancel(_ picker: ColorPicker) {
    waiting.withLock { $0.take() }?.resume(returning: nil)
  }
}
// listing: end
