// The parcel-tracking SDK the tutorial starts from. It was written before Swift
// Concurrency: one call, a completion handler with an optional pair, and a request object
// that can be cancelled.
import Foundation

/// Where a parcel is.
struct TrackingStatus: Sendable, Equatable {
  var place: String
  var delivered: Bool
}

/// What the tracker reports instead of a status.
enum TrackingError: Error, Equatable {
  case unknownParcel
  /// Sent to the completion handler after `TrackingRequest.cancel()`.
  case cancelled
}

final class ParcelTracker: @unchecked Sendable {
  /// Looks up parcel `number` and calls `completion` exactly once, later, on a queue of the
  /// tracker's own: with a status, with an error, or, when the server's answer was empty,
  /// with neither.
  @discardableResult
  func track(
    _ number: String, completion: @escaping (TrackingStatus?, Error?) -> Void
  ) -> TrackingRequest {
    // …
  }
}

/// One lookup in flight.
final class TrackingRequest: @unchecked Sendable {
  /// Stops the lookup. If it has not answered yet, the completion handler is called at
  /// once, on the calling thread, with `(nil, TrackingError.cancelled)`.
  func cancel() {
    // …
  }
}
