/// Shows where a parcel is: the way the app called the tracker before. The screen keeps the
/// request, and its Stop button calls `cancel()` on it.
func showStatus(
  of number: String, using tracker: ParcelTracker, show: @escaping (String) -> Void
) -> TrackingRequest {
  show("Looking for \(number)…")
  let request = tracker.makeRequest(for: number)
  request.start(
    onStatus: { status in
      show(status.delivered ? "Delivered" : "At \(status.place)")
    },
    onFailure: { failure in
      show(failure == .cancelled ? "Stopped" : "Could not track it: \(failure)")
    })
  return request
}
