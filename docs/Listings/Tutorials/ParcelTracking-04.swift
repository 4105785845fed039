// listing: compile-with ParcelTracker.swift
import Synchronization

/// The tracker answered with nothing at all.
struct EmptyTrackingReply: Error {}

extension ParcelTracker {
  /// Where a lookup is, as seen by its cancellation handler.
  private enum Lookup {
    case notStarted
    case running(TrackingRequest)
    case cancelled
  }

  /// Where parcel `number` is now.
  func status(of number: String) async throws -> TrackingStatus {
    let lookup = Mutex(Lookup.notStarted)
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let request = track(number) { status, error in
          continuation.resume(with: Self.outcome(status, error))
        }
        let cancelledAlready = lookup.withLock { lookup in
          if case .cancelled = lookup { return true }
          lookup = .running(request)
          return false
        }
        if cancelledAlready { request.cancel() }  // outside the lock
      }
    } onCancel: {
      let request = lookup.withLock { lookup -> TrackingRequest? in
        defer { lookup = .cancelled }
        if case .running(let request) = lookup { return request }
        return nil
      }
      request?.cancel()  // outside the lock: cancel() calls the completion at once
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
