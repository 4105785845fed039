// listing: compile-with ParcelTracker.swift
/// Shows where a parcel is: the way the app called the tracker before.
func showStatus(
  of number: String, using tracker: ParcelTracker, show: @escaping (String) -> Void
) {
  show("Looking for \(number)…")
  tracker.track(number) { status, error in
    if let status {
      show(status.delivered ? "Delivered" : "At \(status.place)")
    } else if let error {
      show("Could not track it: \(error)")
    }
    // (nil, nil) falls through: the screen says "Looking for…" forever.
  }
}
