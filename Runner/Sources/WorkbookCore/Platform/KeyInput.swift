import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keys one at a time, without echo, from a terminal on standard input, for `watch`. Only
/// when standard input and output are both a terminal; the terminal's settings are put back
/// by ``restore()``, when this is released, and on Ctrl-C or SIGTERM.
final class KeyInput: Sendable {
  private let saved: SavedTerminal
  private let cleanup: Int

  /// `nil` when standard input or output is not a terminal (piped, CI).
  init?() {
    guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1 else { return nil }
    var original = termios()
    guard tcgetattr(STDIN_FILENO, &original) == 0 else { return nil }
    var raw = original
    // Each key as it is typed, not echoed; Ctrl-C still interrupts.
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
    guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return nil }
    let saved = SavedTerminal(original)
    self.saved = saved
    cleanup = InterruptCleanup.add { saved.restore() }
  }

  deinit {
    restore()
  }

  /// Puts the terminal back as it was; idempotent.
  func restore() {
    saved.restore()
    InterruptCleanup.remove(cleanup)
  }

  /// The next key typed within `timeout`, or `nil`.
  func key(within timeout: Duration) -> Character? {
    var entry = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
    let milliseconds =
      Int32(timeout.components.seconds * 1000)
      + Int32(timeout.components.attoseconds / 1_000_000_000_000_000)
    guard poll(&entry, 1, milliseconds) == 1 else { return nil }
    var byte: UInt8 = 0
    guard read(STDIN_FILENO, &byte, 1) == 1 else { return nil }
    return Character(Unicode.Scalar(byte))
  }
}

/// The terminal's settings before `KeyInput` changed them.
private final class SavedTerminal: Sendable {
  private let original: Mutex<(settings: termios, restored: Bool)>

  init(_ settings: termios) {
    original = Mutex((settings, false))
  }

  func restore() {
    original.withLock { state in
      guard !state.restored else { return }
      var settings = state.settings
      _ = tcsetattr(STDIN_FILENO, TCSANOW, &settings)
      state.restored = true
    }
  }
}
