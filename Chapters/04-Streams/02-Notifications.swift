import Foundation
import LegacyKit

// The notification way, in a status bar that shows the charge:
//
//     observer = battery.notificationCenter.addObserver(
//       forName: Battery.levelDidChangeNotification, object: battery, queue: nil
//     ) { [weak self] _ in
//       self?.showCharge(battery.level)
//     }
//     …
//     deinit {
//       battery.notificationCenter.removeObserver(observer)
//     }

/// The battery's charge, in percent, after each change from now on, for as long as the caller
/// iterates: `for await level in levelChanges(of: battery) { … }`.
///
/// Listens to this battery only, in its own notification center, and stops listening when the
/// iteration ends, however it ends.
func levelChanges(of battery: Battery) -> AsyncStream<Int> {
  // TODO: Yield `battery.level` after every `Battery.levelDidChangeNotification` that this
  // battery posts, and stop listening when the stream ends.
  AsyncStream { continuation in
    continuation.finish()
  }
}
