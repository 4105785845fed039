import Dispatch
import Foundation
import WorkbookTesting

// Threads of their own, as legacy code calls in from: never the pool's that runs tasks.

/// Runs `body` on `count` threads of their own, each given its index, started together;
/// returns once all have finished.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
  let line = StartLine(parties: count)
  await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
    let group = DispatchGroup()
    for index in 0..<count {
      group.enter()
      Thread {
        line.go(jitter: 0...0)
        body(index)
        group.leave()
      }.start()
    }
    group.notify(queue: .global()) { continuation.resume() }
  }
}

/// Runs `body` on `count` threads of their own, started together; returns once all have
/// finished.
func onThreads(_ count: Int, _ body: @escaping @Sendable () -> Void) async {
  await onThreads(count) { (_: Int) in body() }
}

/// Runs `body` on a thread of its own and returns its result.
func onAnotherThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    Thread { continuation.resume(returning: body()) }.start()
  }
}
