import MiniLegacy

/// A callback that fires twice, bridged without a guard.
public func firstDelivery(_ value: Int) async -> Int {
  await withCheckedContinuation { continuation in
    deliverLater(value, times: 2) { delivered in
      continuation.resume(returning: delivered)
    }
  }
}
