// listing: compile-with ParcelTracker.swift
extension ParcelTracker {
  /// Where parcel `number` is now. Cancelling the calling task cancels the lookup and
  /// throws `CancellationError`.
  func status(of number: String) async throws -> TrackingStatus {
    let request = makeRequest(for: number)  // before either closure can run
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        request.start(
          onStatus: { status in
            continuation.resume(returning: status)
          },
          onFailure: { failure in
            if failure == .cancelled {
              continuation.resume(throwing: CancellationError())
            } else {
              continuation.resume(throwing: failure)
            }
          })
      }
    } onCancel: {
      request.cancel()  // before, during or after start: the request knows which
    }
  }
}
