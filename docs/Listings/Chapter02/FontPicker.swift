// Chapter 2, exercise 2.2: how a Swift framework fakes an optional delegate method, and why
// the compiler never asks for it.

final class FontPicker {
  weak var delegate: FontPickerDelegate?
}

// listing: optional
protocol FontPickerDelegate: AnyObject {
  func fontPicker(_ picker: FontPicker, didChoose fontName: String)
  func fontPickerDidCancel(_ picker: FontPicker)  // "optional": see the extension
}

extension FontPickerDelegate {
  func fontPickerDidCancel(_ picker: FontPicker) {}  // the default does nothing
}

final class SettingsScreen: FontPickerDelegate {  // compiles without a cancel method
  func fontPicker(_ picker: FontPicker, didChoose fontName: String) {}
}
// listing: end
