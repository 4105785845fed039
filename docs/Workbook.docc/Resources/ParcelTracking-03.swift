import Synchronization

/// The tracker answered with nothing at all.
struct EmptyTrackingReply: Error {}

extension ParcelTracker {
  /// Where parcel `number` is now.
  func status(of number: String) async throws -> TrackingStatus {
    let current = Mutex<TrackingRequest?>(nil)
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let request = track(number) { status, error in
          continuation.resume(with: Self.outcome(status, error))
        }
        current.withLock { $0 = request }
      }
    } onCancel: {
      current.withLock { $0 }?.cancel()
    }
  }

  /// One answer for each of the four shapes of reply.
  private static func outcome(
    _ status: TrackingStatus?, _ error: Error?
  ) -> Result<TrackingStatus, any Error> {
    switch (status, error) {
    case (let status?, nil): return .success(status)
    case (nil, let error?): return .failure(error)
    case (let status?, _?): return .success(status)  // a status wins over a warning
    case (nil, nil): return .failure(EmptyTrackingReply())
    }
  }
}
