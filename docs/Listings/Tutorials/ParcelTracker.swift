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
    // listing: elide // …
    let request = TrackingRequest(completion)
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) {
      switch number {
      case "": request.finish(nil, nil)
      case let known where known.hasPrefix("JD"):
        request.finish(TrackingStatus(place: "Leeds depot", delivered: false), nil)
      default: request.finish(nil, TrackingError.unknownParcel)
      }
    }
    return request
    // listing: show
  }
}

/// One lookup in flight.
final class TrackingRequest: @unchecked Sendable {
  /// Stops the lookup. If it has not answered yet, the completion handler is called at
  /// once, on the calling thread, with `(nil, TrackingError.cancelled)`.
  func cancel() {
    // listing: elide // …
    finish(nil, TrackingError.cancelled)
    // listing: show
  }
  // listing: hide

  private let lock = NSLock()
  private var completion: ((TrackingStatus?, Error?) -> Void)?

  fileprivate init(_ completion: @escaping (TrackingStatus?, Error?) -> Void) {
    self.completion = completion
  }

  fileprivate func finish(_ status: TrackingStatus?, _ error: Error?) {
    lock.lock()
    let completion = self.completion
    self.completion = nil
    lock.unlock()
    completion?(status, error)
  }
  // listing: show
}
