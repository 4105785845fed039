// listing: compile-with ParcelTracker.swift
// listing: compile-with ParcelTracking-05.swift
/// Shows where a parcel is. The screen's Stop button cancels the task that runs this.
@MainActor
func showStatus(of number: String, using tracker: ParcelTracker, show: (String) -> Void) async {
  show("Looking for \(number)…")
  do {
    let status = try await tracker.status(of: number)
    show(status.delivered ? "Delivered" : "At \(status.place)")
  } catch is CancellationError {
    show("Stopped")
  } catch {
    show("Could not track it: \(error)")
  }
}
