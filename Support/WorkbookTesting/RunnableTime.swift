import Foundation

/// Time in which the tests could run, counted by waking up in short slices.
///
/// A deadline of two seconds of wall-clock time fails a correct answer on a machine so busy
/// that its callback is not scheduled for seconds. So deadlines count only the time in
/// which this process was able to run: a slice that wakes up far later than asked counts as
/// a little more than the slice, not as the whole delay. A wall-clock cap still ends every
/// wait, so a continuation that is never resumed fails within seconds even then.
struct RunnableTime {
  /// How much runnable time the wait lasts.
  let limit: Duration
  /// The wall-clock time after which the wait ends whatever was counted.
  let cap: Duration
  /// How long each sleep asks for.
  let slice: Duration
  /// The most one slice may count, however late it woke up.
  let sliceAtMost: Duration

  private let clock = ContinuousClock()
  private let start: ContinuousClock.Instant
  /// The runnable time counted so far.
  private(set) var counted: Duration = .zero
  /// How a slice sleeps: `Task.sleep`, or a stand-in in the tests of this type.
  private let sleeper: @Sendable (Duration) async throws -> Void

  /// Counts up to `limit`, ending anyway after `capFactor` times `limit` of wall-clock time.
  init(
    _ limit: Duration, slice: Duration, capFactor: Int = 5,
    sleeper: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
  ) {
    self.sleeper = sleeper
    self.limit = limit
    self.cap = limit * capFactor
    self.slice = slice
    self.sliceAtMost = slice + .milliseconds(20)
    self.start = clock.now
  }

  /// True once `limit` of runnable time, or the wall-clock cap, has passed.
  var isOver: Bool { counted >= limit || clock.now - start >= cap }

  /// Sleeps one slice and counts it; throws `CancellationError` if the task is cancelled.
  mutating func sleepOneSlice() async throws {
    let before = clock.now
    try await sleeper(slice)
    counted += min(clock.now - before, sliceAtMost)
  }

  /// Sleeps one slice by blocking this thread, and counts it: for a watch that runs on a
  /// thread of its own, where no task may be able to run.
  mutating func sleepOneSliceBlockingThisThread() {
    let before = clock.now
    Thread.sleep(forTimeInterval: slice / .seconds(1))
    counted += min(clock.now - before, sliceAtMost)
  }

  /// Sleeps until the wait is over; returns early only when the task is cancelled.
  static func sleep(_ limit: Duration) async {
    var time = RunnableTime(limit, slice: .milliseconds(50))
    while !time.isOver {
      do { try await time.sleepOneSlice() } catch { return }
    }
  }
}
