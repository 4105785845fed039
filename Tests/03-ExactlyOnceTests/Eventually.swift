import Testing

/// Waits until `condition` holds, checking every couple of milliseconds, for at most
/// `limit`. If it never holds, records an issue that says what did not happen and returns
/// false.
///
/// Tests use it to wait for what legacy code does on its own threads, for example a
/// second callback, so that a crash it causes happens inside the test that provoked it.
@discardableResult
func eventually(
  _ what: String, within limit: Duration = .seconds(2),
  sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool
) async -> Bool {
  let clock = ContinuousClock()
  let deadline = clock.now.advanced(by: limit)
  while !condition() {
    guard clock.now < deadline else {
      Issue.record("expected \(what) within \(limit)", sourceLocation: sourceLocation)
      return false
    }
    try? await Task.sleep(for: .milliseconds(2))
  }
  return true
}
