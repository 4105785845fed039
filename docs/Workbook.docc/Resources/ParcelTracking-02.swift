extension ParcelTracker {
  /// Where parcel `number` is now.
  func status(of number: String) async throws -> TrackingStatus {
    try await withCheckedThrowingContinuation { continuation in
      makeRequest(for: number).start(
        onStatus: { status in
          continuation.resume(returning: status)
        },
        onFailure: { failure in
          continuation.resume(throwing: failure)
        })
    }
  }
}
