import Foundation
import LegacyKit

/// Holds a simulated framework's callbacks until the test opens it, so that a test can make
/// two calls overlap for certain, however busy the machine is: nothing is reported until
/// both calls have started.
///
/// Once open, the held callbacks and every later one run in order, one at a time, on a
/// serial background queue (as a framework's own queue would run them).
final class CallbackGate: @unchecked Sendable {
  private let lock = NSLock()
  private let queue = DispatchQueue(label: "DelegatesTests.CallbackGate")
  private var held: [@Sendable () -> Void] = []
  private var isOpen = false

  /// A script that delivers through this gate, once per report.
  var script: CallbackScript {
    CallbackScript(
      timing: .scheduled(
        CallbackScheduler(name: "a gate the test opens") { [self] work in hold(work) }))
  }

  /// How many callbacks are waiting for the gate to open.
  var heldCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return held.count
  }

  /// Lets every held callback run, in the order they came, and every later one after them.
  func open() {
    lock.lock()
    defer { lock.unlock() }
    isOpen = true
    for work in held { queue.async(execute: work) }
    held = []
  }

  private func hold(_ work: @escaping @Sendable () -> Void) {
    lock.lock()
    defer { lock.unlock() }
    if isOpen {
      queue.async(execute: work)
    } else {
      held.append(work)
    }
  }
}
