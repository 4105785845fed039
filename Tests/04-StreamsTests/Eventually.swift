import Synchronization
import Testing

/// Waits until `condition` holds, checking every 10 ms for at most `limit`, and says whether
/// it did.
///
/// For what a legacy source records on its own threads: a receiver that is about to be
/// stopped, a timer about to be cancelled, a handler about to be removed.
func eventually(
  within limit: Duration = .seconds(2), _ condition: () -> Bool
) async -> Bool {
  let clock = ContinuousClock()
  let deadline = clock.now.advanced(by: limit)
  while !condition() {
    guard clock.now < deadline else { return false }
    try? await Task.sleep(for: .milliseconds(10))
  }
  return true
}

/// Something a test's background task records, for the test to read: a count, a list.
final class Recorder<Value: Sendable>: Sendable {
  private let storage: Mutex<Value>

  init(_ value: Value) {
    storage = Mutex(value)
  }

  var value: Value {
    storage.withLock { $0 }
  }

  func update(_ change: (inout Value) -> Void) {
    storage.withLock { change(&$0) }
  }
}

/// A test's explanation, for one too long to write as a single literal.
func because(_ explanation: String) -> Comment {
  Comment(rawValue: explanation)
}
