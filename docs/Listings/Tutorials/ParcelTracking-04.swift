// listing: compile-with ParcelTracker.swift
extension ParcelTracker {
  /// Where parcel `number` is now.
  func status(of number: String) async throws -> TrackingStatus {
    let request = makeRequest(for: number)  // before either closure can run
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        request.start(
          onStatus: { status in
            continuation.resume(returning: status)
          },
          onFailure: { failure in
            continuation.resume(throwing: failure)
          })
      }
    } onCancel: {
      request.cancel()  // before, during or after start: the request knows which
    }
  }
}
