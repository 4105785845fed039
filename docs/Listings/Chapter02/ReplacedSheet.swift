// Chapter 2, exercise 2.1: a picker that replaces its sheet. The continuation stored for the
// replaced sheet is swapped out and answered, in one step under the lock.
// listing: compile-with ColorPicker.swift
import Synchronization

final class ReplacingColorPicker: ColorPickerDelegate, Sendable {
  private let picker: ColorPicker
  private let waiting = Mutex<CheckedContinuation<Color?, Never>?>(nil)

  init(picker: ColorPicker) {
    self.picker = picker
    picker.delegate = self
  }

  func chooseColor() async -> Color? {
    await withCheckedContinuation { continuation in
      // listing: swap
      let replaced = waiting.withLock { stored in
        defer { stored = continuation }
        return stored
      }
      replaced?.resume(returning: nil)  // its sheet is gone: answer as if the user cancelled
      picker.present()
      // listing: end
    }
  }

  func colorPicker(_ picker: ColorPicker, didChoose color: Color) {
    waiting.withLock { $0.take() }?.resume(returning: color)
  }

  func colorPickerDidCancel(_ picker: ColorPicker) {
    waiting.withLock { $0.take() }?.resume(returning: nil)
  }
}
