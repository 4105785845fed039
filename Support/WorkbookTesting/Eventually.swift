import Testing

/// Waits until `condition` holds, checking every 5 ms for at most `limit` (of time the tests
/// could run: see ``RunnableTime``), and says whether it did.
///
/// For what a simulated framework does on its own threads: a callback still on its way, a
/// delegate being released, a download starting. Tests assert on the result.
public func eventually(
  within limit: Duration = .seconds(2), _ condition: () -> Bool
) async -> Bool {
  PoolStallWatch.start()
  // The limit counts time in which the tests could run (see RunnableTime), so a busy
  // machine does not make a condition that holds a moment later look false.
  var time = RunnableTime(limit, slice: .milliseconds(5))
  while !condition() {
    guard !time.isOver else { return false }
    do { try await time.sleepOneSlice() } catch { return condition() }
  }
  return true
}

/// Waits like ``eventually(within:_:)``, but looks every 100 microseconds for the first 20
/// milliseconds: for the rounds of a race, where each round's condition holds within a
/// moment and `eventually`'s 5 ms slices would add up over hundreds of rounds.
public func soon(within limit: Duration = .seconds(2), _ condition: () -> Bool) async -> Bool {
  let clock = ContinuousClock()
  let quick = clock.now + .milliseconds(20)
  while !condition() {
    guard clock.now < quick else { return await eventually(within: limit, condition) }
    try? await Task.sleep(for: .microseconds(100))
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
