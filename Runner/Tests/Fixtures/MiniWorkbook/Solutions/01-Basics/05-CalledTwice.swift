import MiniLegacy
import Synchronization

/// A callback that fires twice, bridged so only the first call resumes.
public func firstDelivery(_ value: Int) async -> Int {
  await withCheckedContinuation { continuation in
    let resumed = Atomic(false)
    deliverLater(value, times: 2) { delivered in
      if !resumed.exchange(true, ordering: .relaxed) {
        continuation.resume(returning: delivered)
      }
    }
  }
}
