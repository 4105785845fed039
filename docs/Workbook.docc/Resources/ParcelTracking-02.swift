/// The tracker answered with nothing at all.
struct EmptyTrackingReply: Error {}

extension ParcelTracker {
  /// Where parcel `number` is now.
  func status(of number: String) async throws -> TrackingStatus {
    try await withCheckedThrowingContinuation { continuation in
      track(number) { status, error in
        continuation.resume(with: Self.outcome(status, error))
      }
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
