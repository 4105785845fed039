extension ParcelTracker {
  /// Where parcel `number` is now.
  func status(of number: String) async throws -> TrackingStatus {
    try await withCheckedThrowingContinuation { continuation in
      track(number) { status, error in
        // Resume `continuation` here, exactly once.
      }
    }
  }
}
