import Dispatch
import MiniLegacy

/// Waits for the legacy API by blocking the thread. (Nobody signals the semaphore.)
public func blockingValue(_ value: Int) -> Int {
  let done = DispatchSemaphore(value: 0)
  deliverLater(value) { _ in }
  done.wait()
  return value
}
