extension ParcelTracker {
  /// Where parcel `number` is now.
  func status(of number: String) async throws -> TrackingStatus {
    try await withCheckedThrowingContinuation { continuation in
      makeRequest(for: number).start(
        onStatus: { status in
          // Resume `continuation` here…
        },
        onFailure: { failure in
          // …or here: once in all.
        })
    }
  }
}
