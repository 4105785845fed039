import Synchronization

/// A clock whose time moves only when a test says so.
///
/// Code under test takes `some Clock<Duration>` and sleeps on it; the test passes a
/// `ManualClock`, waits until the code is asleep with ``sleeping(_:)``, and moves time on
/// with ``advance(by:)``, which wakes every sleeper whose deadline has come. Nothing waits
/// for real. A cancelled sleeper wakes at once with `CancellationError`, as on any clock.
public final class ManualClock: Clock, Sendable {
  public struct Instant: InstantProtocol, Sendable {
    /// Time since the clock was made.
    public var offset: Duration

    public init(offset: Duration) { self.offset = offset }

    public func advanced(by duration: Duration) -> Instant {
      Instant(offset: offset + duration)
    }

    public func duration(to other: Instant) -> Duration {
      other.offset - offset
    }

    public static func < (lhs: Instant, rhs: Instant) -> Bool {
      lhs.offset < rhs.offset
    }
  }

  private struct Sleeper {
    var id: Int
    var deadline: Instant
    var continuation: CheckedContinuation<Void, any Error>
  }

  private struct Watcher {
    var count: Int
    var continuation: CheckedContinuation<Void, Never>
  }

  private struct State {
    var now = Instant(offset: .zero)
    var sleepers: [Sleeper] = []
    var watchers: [Watcher] = []
    var requested: [Duration] = []
    var nextID = 0

    /// Takes out the watchers that now see enough sleepers.
    mutating func satisfiedWatchers() -> [CheckedContinuation<Void, Never>] {
      let ready = watchers.filter { $0.count <= sleepers.count }
      watchers.removeAll { $0.count <= sleepers.count }
      return ready.map(\.continuation)
    }
  }

  private let state = Mutex(State())

  public init() {}

  public var now: Instant { state.withLock { $0.now } }

  public var minimumResolution: Duration { .zero }

  /// How many tasks are asleep on this clock.
  public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

  /// How long each sleep asked for, measured from the time it started, in order.
  public var requestedSleeps: [Duration] { state.withLock { $0.requested } }

  public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
    let id = state.withLock { state in
      state.nextID += 1
      return state.nextID
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        let (resumeNow, watchers) = state.withLock {
          state -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) in
          state.requested.append(state.now.duration(to: deadline))
          if Task.isCancelled { return (.failure(CancellationError()), []) }
          if deadline <= state.now { return (.success(()), []) }
          state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
          return (nil, state.satisfiedWatchers())
        }
        if let resumeNow { continuation.resume(with: resumeNow) }
        for watcher in watchers { watcher.resume() }
      }
    } onCancel: {
      let sleeper = state.withLock { state -> Sleeper? in
        guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
        return state.sleepers.remove(at: index)
      }
      sleeper?.continuation.resume(throwing: CancellationError())
    }
  }

  /// Moves time on by `duration` and wakes, in deadline order, every sleeper whose
  /// deadline has come.
  public func advance(by duration: Duration) {
    let woken = state.withLock { state -> [Sleeper] in
      state.now = state.now.advanced(by: duration)
      let now = state.now
      let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
      state.sleepers.removeAll { $0.deadline <= now }
      return due
    }
    for sleeper in woken { sleeper.continuation.resume() }
  }

  /// Returns once at least `count` tasks are asleep on this clock.
  public func sleeping(_ count: Int = 1) async {
    await withCheckedContinuation { continuation in
      let ready = state.withLock { state -> Bool in
        if state.sleepers.count >= count { return true }
        state.watchers.append(Watcher(count: count, continuation: continuation))
        return false
      }
      if ready { continuation.resume() }
    }
  }
}
