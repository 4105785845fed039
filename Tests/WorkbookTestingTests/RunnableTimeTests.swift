import Testing

@testable import WorkbookTesting

@Suite("RunnableTime")
struct RunnableTimeTests {
  @Test("On time, a wait lasts its limit of wall-clock time")
  func onTime() async throws {
    let clock = ContinuousClock()
    let start = clock.now
    await RunnableTime.sleep(.milliseconds(300))
    let took = clock.now - start
    #expect(took >= .milliseconds(300), "the wait ended early, after \(took)")
  }

  // The two tests below time the pool's own sleeps, so the pool check of the suites running
  // beside them (which holds all of the pool's threads but one) is off while they run.

  @Test("A slice that wakes up late counts as little more than the slice")
  func lateSlices() async throws { try await withoutPoolCheck { try await lateSlicesBody() } }

  func lateSlicesBody() async throws {
    // Each slice asks for 10 ms and wakes up 200 ms later, as on a starved machine; the
    // wall-clock cap (2 s) is far enough away not to end the wait first.
    var time = RunnableTime(.milliseconds(100), slice: .milliseconds(10), capFactor: 20) {
      slice in
      try await Task.sleep(for: slice + .milliseconds(200))
    }
    try await time.sleepOneSlice()
    #expect(time.counted == .milliseconds(30), "a late slice counted \(time.counted)")
    #expect(!time.isOver, "one late slice used up a 100 ms wait")
    while !time.isOver { try await time.sleepOneSlice() }
    #expect(time.counted == .milliseconds(120), "four late slices make 120 ms, not \(time.counted)")
  }

  @Test("However late the slices, the wall-clock cap ends the wait")
  func cap() async throws { try await withoutPoolCheck { try await capBody() } }

  func capBody() async throws {
    let clock = ContinuousClock()
    let start = clock.now
    // 100 ms of runnable time, capped at 200 ms of wall-clock time; each slice counts 20 ms
    // while taking 100 ms, so only the cap can end the wait in time.
    var time = RunnableTime(.milliseconds(100), slice: .zero, capFactor: 2) { _ in
      try await Task.sleep(for: .milliseconds(100))
    }
    while !time.isOver { try await time.sleepOneSlice() }
    #expect(time.counted < .milliseconds(100), "the cap should have ended it first")
    // Loose: what proves the cap is `counted` above; this only says the wait ended, even on
    // a machine so busy that each 100 ms sleep takes several times as long.
    #expect(clock.now - start < .seconds(3))
  }
}
