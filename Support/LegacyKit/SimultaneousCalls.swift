import Foundation
import Synchronization

/// Calls `body` from `count` new threads at, as nearly as the machine allows, the same
/// moment, then calls `completion` once every call of `body` has returned.
///
/// Legacy frameworks that deliver a callback more than once rarely do it politely one call
/// after the other: a retransmission, a timer and a network reply can all arrive together.
/// Each thread waits at a starting line until all of them have arrived, and then they go
/// at once, which makes a race between them as likely as the hardware allows. Dedicated
/// threads, not Dispatch's pool: a pool with fewer threads than `count` could never fill
/// the starting line.
///
/// - Parameters:
///   - count: How many threads call `body`, each with its own index in `0..<count`.
///   - completion: Called once, on the thread that finished last.
public func callSimultaneously(
  _ count: Int, _ body: @escaping @Sendable (Int) -> Void,
  completion: @escaping @Sendable () -> Void = {}
) {
  precondition(count > 0, "at least one thread must make the call")
  let line = StartingLine()
  for index in 0..<count {
    let thread = Thread {
      line.arrived.add(1, ordering: .sequentiallyConsistent)
      while line.arrived.load(ordering: .sequentiallyConsistent) < count {
        sched_yield()
      }
      body(index)
      if line.finished.add(1, ordering: .sequentiallyConsistent).newValue == count {
        completion()
      }
    }
    thread.start()
  }
}

/// Where the threads of ``callSimultaneously(_:_:completion:)`` wait for each other.
private final class StartingLine: Sendable {
  let arrived = Atomic<Int>(0)
  let finished = Atomic<Int>(0)
}
