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
  AsyncStream { continuation in
    let center = battery.notificationCenter
    // `object: battery`: other batteries post the same name. With no queue, the center runs
    // the block inside `post`, on the posting thread, so `battery.level` is the level that was
    // just posted. Yield that Int, not the `Notification`: a notification is not Sendable, so
    // it should not leave the thread it was posted on.
    //
    // The token is an opaque object that is only ever handed back to the center, whose
    // methods are thread-safe. The compiler cannot know that (`NSObjectProtocol` is not
    // Sendable), so `nonisolated(unsafe)` lets the `@Sendable` closure below capture it.
    nonisolated(unsafe) let observer = center.addObserver(
      forName: Battery.levelDidChangeNotification, object: battery, queue: nil
    ) { _ in
      continuation.yield(battery.level)
    }
    // However the iteration ends, stop listening. Without this, the center keeps the block,
    // and everything it captures, for as long as the center lives, and runs it on every
    // change.
    continuation.onTermination = { _ in
      center.removeObserver(observer)
    }
  }
}
