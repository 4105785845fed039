import Dispatch
import MiniLegacy

/// Waits for the legacy API by blocking the thread until the callback signals.
public func blockingValue(_ value: Int) -> Int {
  let done = DispatchSemaphore(value: 0)
  deliverLater(value) { _ in done.signal() }
  done.wait()
  return value
}
