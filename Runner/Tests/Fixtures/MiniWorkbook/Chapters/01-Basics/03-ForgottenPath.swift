import MiniLegacy

/// The value the legacy API delivers, awaited. (The learner forgot a path.)
public func deliveredValue(_ value: Int) async -> Int {
  await withCheckedContinuation { continuation in
    deliverLater(value) { delivered in
      if delivered > 10 {
        continuation.resume(returning: delivered)
      }
    }
  }
}
