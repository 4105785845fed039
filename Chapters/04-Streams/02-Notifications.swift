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
  // TODO: Inside the stream's closure, add a block observer for
  // `Battery.levelDidChangeNotification` from `battery` that yields `battery.level`, and
  // remove that observer in the continuation's `onTermination`.
  AsyncStream { continuation in
    continuation.finish()
  }
}
