// The parcel-tracking SDK the tutorial starts from. It was written before Swift
// Concurrency: a request object that is made first and started later, one closure for each
// way a lookup can end, and a cancel() that works before, during and after the lookup.
import Foundation

/// Where a parcel is.
struct TrackingStatus: Sendable, Equatable {
  var place: String
  var delivered: Bool
}

/// Why a lookup ended without a status.
enum TrackingFailure: Error, Equatable {
  case unknownParcel
  /// The request was cancelled; see `TrackingRequest.cancel()`.
  case cancelled
}

final class ParcelTracker: @unchecked Sendable {
  /// Makes a request for parcel `number`. Nothing is sent until `start` is called.
  func makeRequest(for number: String) -> TrackingRequest {
    // …
  }
}

/// One lookup: made, then started once, and cancellable at any moment.
final class TrackingRequest: @unchecked Sendable {
  /// Sends the request. Exactly one of the two closures runs, once: `onStatus` with where
  /// the parcel is, or `onFailure` with why there is no status. They run later, on a queue
  /// of the tracker's own, unless the request was cancelled before it started: then
  /// `onFailure(.cancelled)` runs at once, inside this call.
  func start(
    onStatus: @escaping (TrackingStatus) -> Void,
    onFailure: @escaping (TrackingFailure) -> Void
  ) {
    // …
  }

  /// Stops the lookup. A lookup that is running and has not answered yet calls
  /// `onFailure(.cancelled)` at once, inside this call, on the calling thread; one that has
  /// not started yet will call it as soon as it is started; one that has answered already
  /// is not affected.
  func cancel() {
    // …
  }
}
