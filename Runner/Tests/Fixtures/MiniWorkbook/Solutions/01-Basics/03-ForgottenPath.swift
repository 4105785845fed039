import MiniLegacy

/// The value the legacy API delivers, awaited: every path resumes.
public func deliveredValue(_ value: Int) async -> Int {
  await withCheckedContinuation { continuation in
    deliverLater(value) { delivered in
      continuation.resume(returning: delivered)
    }
  }
}
