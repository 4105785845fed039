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
    // listing: elide // …
    TrackingRequest(number: number)
    // listing: show
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
    // listing: elide // …
    let cancelledFirst = lock.withLock {
      guard case .ready = state else { return true }
      state = .running(onStatus: onStatus, onFailure: onFailure)
      return false
    }
    if cancelledFirst {
      onFailure(.cancelled)
      return
    }
    let number = self.number
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { [self] in
      if number.hasPrefix("JD") {
        finish(.success(TrackingStatus(place: "Leeds depot", delivered: false)))
      } else {
        finish(.failure(.unknownParcel))
      }
    }
    // listing: show
  }

  /// Stops the lookup. A lookup that is running and has not answered yet calls
  /// `onFailure(.cancelled)` at once, inside this call, on the calling thread; one that has
  /// not started yet will call it as soon as it is started; one that has answered already
  /// is not affected.
  func cancel() {
    // listing: elide // …
    finish(.failure(.cancelled))
    // listing: show
  }
  // listing: hide

  private enum State {
    case ready
    case running(
      onStatus: (TrackingStatus) -> Void, onFailure: (TrackingFailure) -> Void)
    case done
  }

  private let number: String
  private let lock = NSLock()
  private var state = State.ready

  fileprivate init(number: String) {
    self.number = number
  }

  /// Ends the lookup, once: the first call wins. A cancel before the start leaves `.done`
  /// behind, and `start` then answers `.cancelled` at once.
  private func finish(_ outcome: Result<TrackingStatus, TrackingFailure>) {
    let running = lock.withLock { () -> State in
      let previous = state
      state = .done
      return previous
    }
    guard case .running(let onStatus, let onFailure) = running else { return }
    switch outcome {
    case .success(let status): onStatus(status)
    case .failure(let failure): onFailure(failure)
    }
  }
  // listing: show
}
