import Testing

/// Waits until `condition` holds, checking every 5 ms for at most `limit`, and says whether
/// it did.
///
/// For what a simulated framework does on its own threads: a callback still on its way, a
/// delegate being released, a download starting. Tests assert on the result.
public func eventually(
  within limit: Duration = .seconds(2), _ condition: () -> Bool
) async -> Bool {
  let clock = ContinuousClock()
  let deadline = clock.now.advanced(by: limit)
  while !condition() {
    guard clock.now < deadline else { return false }
    try? await Task.sleep(for: .milliseconds(5))
  }
  return true
}

/// Waits like ``eventually(within:_:)``, and records an issue naming `what` did not happen
/// if `condition` never holds.
///
/// Waiting inside the test for legacy code's late callbacks means a crash they cause
/// happens inside the test that provoked it.
@discardableResult
public func eventually(
  _ what: String, within limit: Duration = .seconds(2),
  sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool
) async -> Bool {
  guard await eventually(within: limit, condition) else {
    Issue.record("expected \(what) within \(limit)", sourceLocation: sourceLocation)
    return false
  }
  return true
}
