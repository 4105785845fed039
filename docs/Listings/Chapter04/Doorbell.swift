// Chapter 4, exercise 4.2: an observer token that is safe to share, said out loud.
import Foundation

extension Notification.Name {
  static let doorbellDidRing = Notification.Name("DoorbellDidRing")
}

func rings(in center: NotificationCenter) -> AsyncStream<Void> {
  AsyncStream { continuation in
    // listing: token
    nonisolated(unsafe) let token = center.addObserver(
      forName: .doorbellDidRing, object: nil, queue: nil
    ) { _ in
      // listing: elide // …
      continuation.yield()
      // listing: show
    }
    continuation.onTermination = { _ in center.removeObserver(token) }
    // listing: end
  }
}
