// Chapter 6, exercise 6.2: rules as a value type that decides under the lock, and a class
// that acts (resumes) after the lock is released.
import Synchronization

// listing: permits
struct PermitRules {
  var available: Int
  var waiting: [CheckedContinuation<Void, Never>] = []

  enum Action {
    case none
    case resume(CheckedContinuation<Void, Never>)
  }

  mutating func acquire(_ waiter: CheckedContinuation<Void, Never>) -> Action {
    if available > 0 {
      available -= 1
      return .resume(waiter)
    }
    waiting.append(waiter)
    return .none
  }

  mutating func release() -> Action {
    if waiting.isEmpty {
      available += 1
      return .none
    }
    return .resume(waiting.removeFirst())  // the permit goes straight to the waiter
  }
}

final class Permits: Sendable {
  private let rules: Mutex<PermitRules>

  init(_ count: Int) {
    rules = Mutex(PermitRules(available: count))
  }

  func acquire() async {
    await withCheckedContinuation { waiter in
      let action = rules.withLock { $0.acquire(waiter) }
      if case .resume(let waiter) = action { waiter.resume() }  // after the lock
    }
  }

  func release() {
    if case .resume(let waiter) = rules.withLock({ $0.release() }) { waiter.resume() }
  }
}
// listing: end
