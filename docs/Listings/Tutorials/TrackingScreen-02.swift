// listing: compile-with ParcelTracker.swift
// listing: compile-with ParcelTracking-02.swift
/// Shows where a parcel is, now in straight-line code.
@MainActor
func showStatus(of number: String, using tracker: ParcelTracker, show: (String) -> Void) async {
  show("Looking for \(number)…")
  do {
    let status = try await tracker.status(of: number)
    show(status.delivered ? "Delivered" : "At \(status.place)")
  } catch {
    show("Could not track it: \(error)")
  }
}
