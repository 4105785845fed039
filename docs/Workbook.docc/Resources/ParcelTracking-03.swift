import Synchronization

extension ParcelTracker {
  /// Where parcel `number` is now.
  func status(of number: String) async throws -> TrackingStatus {
    let current = Mutex<TrackingRequest?>(nil)
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let request = makeRequest(for: number)
        current.withLock { $0 = request }
        request.start(
          onStatus: { status in
            continuation.resume(returning: status)
          },
          onFailure: { failure in
            continuation.resume(throwing: failure)
          })
      }
    } onCancel: {
      current.withLock { $0 }?.cancel()
    }
  }
}
