// Chapter 3, exercise 3.2: Mutex makes "check and update" one indivisible step.
// listing: counter
import Synchronization

final class TicketCounter: Sendable {
  private let remaining = Mutex(3)

  /// Returns true to each of the first three callers, from any thread.
  func claim() -> Bool {
    remaining.withLock { count in
      guard count > 0 else { return false }
      count -= 1
      return true
    }
  }
}
// listing: end
