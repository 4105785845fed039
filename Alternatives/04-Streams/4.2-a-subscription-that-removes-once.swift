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
    let subscription = LevelSubscription(center: battery.notificationCenter)
    // In place before the observer exists, so no ending can slip past it.
    continuation.onTermination = { _ in
      subscription.cancel()
    }
    subscription.start(battery: battery) { level in
      continuation.yield(level)
    }
  }
}

/// One observation of a battery's level, removed exactly once, from any thread.
private final class LevelSubscription: @unchecked Sendable {
  private let center: NotificationCenter
  private let lock = NSLock()
  private var token: (any NSObjectProtocol)?
  private var cancelled = false

  init(center: NotificationCenter) {
    self.center = center
  }

  func start(battery: Battery, _ report: @escaping @Sendable (Int) -> Void) {
    let token = center.addObserver(
      forName: Battery.levelDidChangeNotification, object: battery, queue: nil
    ) { _ in
      report(battery.level)  // inside `post`, on the posting thread
    }
    lock.lock()
    let keep = !cancelled
    if keep { self.token = token }
    lock.unlock()
    if !keep { center.removeObserver(token) }
  }

  func cancel() {
    lock.lock()
    cancelled = true
    let token = self.token
    self.token = nil
    lock.unlock()
    if let token { center.removeObserver(token) }
  }
}
