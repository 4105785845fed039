/// Waits until `condition` holds, checking every 10 ms for at most `limit`, and says whether
/// it did.
///
/// For what a simulated framework records from its own threads: a delegate call that is
/// still on its way, a sheet that is about to be presented, a delegate being released.
func eventually(
  within limit: Duration = .seconds(2), _ condition: () -> Bool
) async -> Bool {
  let clock = ContinuousClock()
  let deadline = clock.now.advanced(by: limit)
  while !condition() {
    guard clock.now < deadline else { return false }
    try? await Task.sleep(for: .milliseconds(10))
  }
  return true
}
