import Foundation
import Synchronization
import Testing

/// The words that open the issue recorded when the pool's last free thread was blocked.
public let poolBlockedMarker = "Blocked a thread of the concurrency pool:"
/// The words that open the issue recorded when the main actor stopped running jobs.
public let mainActorBlockedMarker = "Blocked the main actor:"

/// What the watchdog found stuck.
enum Blocked: Sendable {
  /// The pool's last free thread ran no probe.
  case pool
  /// The main actor ran no probe, while the pool did.
  case mainActor

  func message(_ operationName: String, patience: Duration) -> String {
    switch self {
    case .pool: poolBlockedMessage(operationName, patience: patience)
    case .mainActor: mainActorBlockedMessage(operationName, patience: patience)
    }
  }
}

/// Thrown by ``withPoolOfOne(_:patience:sourceLocation:_:)`` when `operation` blocked the
/// pool's one free thread; the test stops there instead of waiting for it.
public struct PoolThreadBlocked: Error, CustomStringConvertible {
  public let description: String
}

/// Runs `operation` with every thread of Swift's concurrency pool but one held by the test,
/// and fails when that one thread stops running tasks while `operation` waits.
///
/// Whatever blocks a thread of the pool (a semaphore, `DispatchGroup.wait`, `Thread.sleep`,
/// a blocking read, `waitUntilExit`), and in whatever task it does so (the test's own, a
/// child, `Task {}`, `Task.detached`), it then blocks the last free thread: nothing else
/// async can run, on any number of cores. A watchdog thread outside the pool sends the pool
/// a small probe job every few milliseconds; when one has not started after `patience` of
/// time in which the watchdog itself could run (see ``RunnableTime``: a starved machine
/// does not count), the pool is blocked. The held threads are let go at once, so the run
/// goes on, and the test gets an issue that says so.
///
/// Correct async code never needs more than one thread to make progress, so it passes.
/// Runs that overlap (two tests at once, or one inside another) share one squeeze, and all
/// of them fail when the pool is blocked.
public func withPoolOfOne<T: Sendable>(
  _ operationName: String,
  patience: Duration = .milliseconds(1500),
  sourceLocation: SourceLocation = #_sourceLocation,
  _ operation: sending @escaping @isolated(any) () async throws -> T
) async throws -> T {
  let (outcomes, report) = AsyncStream.makeStream(
    of: Result<T, any Error>?.self, bufferingPolicy: .bufferingOldest(1))
  let found = Locked<Blocked>(.pool)
  let test = currentTestName()
  let membership = await SharedSqueeze.shared.join(patience: patience) { what in
    announceBlocked(what.message(operationName, patience: patience), test: test)
    found.withLock { $0 = what }
    report.yield(nil)
  }
  defer { SharedSqueeze.shared.leave(membership) }
  // The operation's own checks, and its own withoutPoolCheck, must not wait for their turn
  // behind this check: they would wait for themselves.
  let work = Task {
    do {
      let value = try await PoolCheckScope.$isMember.withValue(true) { try await operation() }
      report.yield(.success(value))
    } catch {
      report.yield(.failure(error))
    }
  }
  var iterator = outcomes.makeAsyncIterator()
  guard let first = await iterator.next() else {
    work.cancel()
    throw CancellationError()
  }
  if let outcome = first { return try outcome.get() }

  work.cancel()
  let message = found.value.message(operationName, patience: patience)
  Findings.record(message, at: sourceLocation)
  throw PoolThreadBlocked(description: message)
}

/// The squeeze that every ``withPoolOfOne(_:patience:sourceLocation:_:)`` running in the
/// process shares: two would hold every thread between them.
final class SharedSqueeze: Sendable {
  static let shared = SharedSqueeze()

  private struct State {
    var squeeze: PoolSqueeze?
    /// True while the squeeze takes its threads; joiners then wait in `waiting`.
    var starting = false
    var waiting: [CheckedContinuation<Void, Never>] = []
    var members: [Int: @Sendable (Blocked) -> Void] = [:]
    var nextMember = 0
    /// Counts the times the squeeze was left empty: a linger ends it only if no one came.
    var emptied = 0
    /// While above zero, no squeeze runs (see ``withoutPoolCheck(_:)``).
    var suppressed = 0
    /// Tests waiting to turn the check off until the checks running now are over; no new
    /// check starts meanwhile, or they could wait for ever.
    var waitingToSuppress = 0
    /// While above zero, a test holds the pool on purpose, so a stalled pool is no finding
    /// (see `PoolStallWatch`).
    var heldOnPurpose = 0
  }
  private let state = Mutex(State())

  /// How long a squeeze outlives its last member: tests that wait in a loop (thousands of
  /// rounds) would otherwise start a squeeze, with its thread, per round.
  static let linger = DispatchTimeInterval.milliseconds(200)

  /// How long a check waits for its turn while another test has the check off, and a test
  /// waits to turn it off while checks run: past it, both go on as if alone (a test stuck
  /// in a way nobody foresaw must not stall the others for good).
  static let turnLimit = Duration.seconds(10)

  /// Waits until `takeTurn` (called under the lock) says it is this caller's turn, or for
  /// ``turnLimit``; then `takeTurn` is called with `late` set, and must take it.
  private func waitForTurn(_ takeTurn: (inout State, _ late: Bool) -> Bool) async {
    let clock = ContinuousClock()
    let end = clock.now + Self.turnLimit
    while true {
      let late = clock.now >= end || Task.isCancelled
      if state.withLock({ takeTurn(&$0, late) }) { return }
      try? await Task.sleep(for: .milliseconds(2))
    }
  }

  /// Joins the running squeeze, or starts one; returns the membership to leave with (0:
  /// none, the check is off). `onBlocked` runs once if the pool is blocked while this member
  /// is in.
  ///
  /// While another test has the check off (``withoutPoolCheck(_:)``), or waits to turn it
  /// off, a join waits for it to be on again: a check that the other test ended early, or
  /// never started, would let a blocked thread go unseen. Inside a check or inside
  /// `withoutPoolCheck` already, it does not wait.
  func join(patience: Duration, onBlocked: @escaping @Sendable (Blocked) -> Void) async -> Int {
    if PoolCheckScope.isSuppressing { return 0 }
    let inside = PoolCheckScope.isMember
    var joined: (member: Int, start: PoolSqueeze?) = (0, nil)
    // Joined in the same step as the look at whose turn it is: no test turns the check off
    // in between.
    await waitForTurn { state, late in
      guard inside || late || (state.suppressed == 0 && state.waitingToSuppress == 0) else {
        return false
      }
      if state.suppressed > 0 { return true }
      state.emptied += 1  // a lingering squeeze stays
      state.nextMember += 1
      state.members[state.nextMember] = onBlocked
      joined.member = state.nextMember
      guard state.squeeze == nil else { return true }
      let squeeze = PoolSqueeze(patience: patience)
      state.squeeze = squeeze
      state.starting = true
      joined.start = squeeze
      return true
    }
    let (member, start) = joined
    if member == 0 { return 0 }
    if let start {
      await start.holdAllButOne { [self] in blocked(start, $0) }
      let (waiting, suppressed) = state.withLock { state in
        state.starting = false
        defer { state.waiting = [] }
        // Suppressed while it was starting (and perhaps let go again since): it has ended.
        let ended = state.suppressed > 0 || start.isStopped
        if ended, state.squeeze === start { state.squeeze = nil }
        return (state.waiting, ended)
      }
      if suppressed { start.stop() }
      waiting.forEach { $0.resume() }
    } else {
      await withCheckedContinuation { (ready: CheckedContinuation<Void, Never>) in
        let now = state.withLock { state -> Bool in
          guard state.starting else { return true }
          state.waiting.append(ready)
          return false
        }
        if now { ready.resume() }
      }
    }
    return member
  }

  /// Leaves; when the last member has left and none joins within ``linger``, the held
  /// threads are let go.
  func leave(_ member: Int) {
    let lingering = state.withLock { state -> Int? in
      state.members[member] = nil
      guard state.members.isEmpty, !state.starting, state.squeeze != nil else { return nil }
      state.emptied += 1
      return state.emptied
    }
    guard let lingering else { return }
    DispatchQueue.global().asyncAfter(deadline: .now() + Self.linger) { [self] in
      let done = state.withLock { state -> PoolSqueeze? in
        guard state.emptied == lingering, state.members.isEmpty, !state.starting else {
          return nil
        }
        defer { state.squeeze = nil }
        return state.squeeze
      }
      done?.stop()
    }
  }

  /// Ends the running squeeze, if any, and starts none until `resume()`. `holdsThePool`
  /// says the caller may hold every thread of the pool on purpose.
  ///
  /// It first waits until the checks that other tests run now are over, and no new one
  /// starts meanwhile: ending a squeeze under another test's feet would let the thread that
  /// test's code blocks go unseen. Inside a check of its own (or `withoutPoolCheck`
  /// already) it cannot wait for that check, and ends it at once.
  func suppress(holdsThePool: Bool = true) async {
    let inside = PoolCheckScope.isMember || PoolCheckScope.isSuppressing
    if !inside { state.withLock { $0.waitingToSuppress += 1 } }
    var running: PoolSqueeze?
    // Turned off in the same step as the look at the checks: none joins in between.
    await waitForTurn { state, late in
      guard inside || late || (state.members.isEmpty && !state.starting) else { return false }
      if !inside { state.waitingToSuppress -= 1 }
      state.suppressed += 1
      if holdsThePool { state.heldOnPurpose += 1 }
      // One still starting is stopped too: its watchdog starts watching before the task that
      // started it can run again, which the caller may be about to keep from running (by
      // holding the pool itself). The starter forgets it once it runs.
      running = state.squeeze
      if !state.starting { state.squeeze = nil }
      return true
    }
    running?.stop()
  }

  func resume(holdsThePool: Bool = true) {
    state.withLock {
      $0.suppressed -= 1
      if holdsThePool { $0.heldOnPurpose -= 1 }
    }
  }

  /// True while a test holds the pool on purpose (``withoutPoolCheck(_:)``).
  var isHeldOnPurpose: Bool { state.withLock { $0.heldOnPurpose > 0 } }

  /// The pool was blocked: every member is told, and the next join starts afresh.
  private func blocked(_ squeeze: PoolSqueeze, _ what: Blocked) {
    let members = state.withLock { state -> [@Sendable (Blocked) -> Void] in
      // While the check is off, a test may hold the pool on purpose.
      guard state.squeeze === squeeze, state.suppressed == 0 else { return [] }
      state.squeeze = nil
      defer { state.members = [:] }
      return Array(state.members.values)
    }
    members.forEach { $0(what) }
    if !members.isEmpty { PoolRelief.runAll() }
  }
}

/// What the learner did when the main actor stopped running jobs while they waited.
func mainActorBlockedMessage(_ operationName: String, patience: Duration) -> String {
  "\(mainActorBlockedMarker) \(operationName) blocked the main actor instead of suspending: "
    + "while it waited, no main-actor job could run for \(describe(patience)), so a screen "
    + "would freeze. Likely cause: a semaphore, a dispatch group, a sleep or another blocking "
    + "wait (or long work) in main-actor code; suspend instead, or move the work off the main "
    + "actor."
}

/// Runs `body` with the pool check off for the whole process: no squeeze holds threads of
/// the pool meanwhile. For tests that provoke a race between tasks, which needs the pool's
/// threads to run them at the same time.
public func withoutPoolCheck<T>(_ body: () async throws -> T) async rethrows -> T {
  await SharedSqueeze.shared.suppress()
  defer { SharedSqueeze.shared.resume() }
  return try await PoolCheckScope.$isSuppressing.withValue(true) { try await body() }
}

/// Runs `body` with every thread of the pool free: no squeeze holds one meanwhile. Unlike
/// ``withoutPoolCheck(_:)``, a pool blocked as a whole is still found and named. For tests
/// whose own callbacks hold a thread a while (a slow terminal, say), while the code under
/// test must go on beside them.
public func withAllPoolThreadsFree<T>(_ body: () async throws -> T) async rethrows -> T {
  await SharedSqueeze.shared.suppress(holdsThePool: false)
  defer { SharedSqueeze.shared.resume(holdsThePool: false) }
  return try await PoolCheckScope.$isSuppressing.withValue(true) { try await body() }
}

/// Where the current task stands towards the pool check: inside a check (a member of the
/// squeeze, or a task it started), or inside ``withoutPoolCheck(_:)``. Such a task never
/// waits for its turn at the check: it would wait for itself.
enum PoolCheckScope {
  @TaskLocal static var isMember = false
  @TaskLocal static var isSuppressing = false
}

/// What the learner did when the pool's last free thread stopped running tasks.
func poolBlockedMessage(_ operationName: String, patience: Duration) -> String {
  "\(poolBlockedMarker) \(operationName) blocked its thread instead of suspending: it held "
    + "one of Swift's concurrency threads while it waited, and with the pool down to one free "
    + "thread no task could run for \(describe(patience)). Likely cause: a semaphore, a "
    + "dispatch group, Thread.sleep or another blocking wait in async code, in this task or in "
    + "one it started (Task.detached too); suspend instead, so the thread is free while you "
    + "wait."
}

/// Holds all threads of the concurrency pool but one, and watches the last one.
///
/// Both happen on a thread of its own, outside the pool, since the test's task may have no
/// thread left to run on while they do.
final class PoolSqueeze: Sendable {
  let patience: Duration
  /// The held threads wait on this until they may go.
  private let condition = NSCondition()
  private let state = Mutex(State())

  struct State {
    /// Holders numbered below this keep their thread; the others let it go.
    var holdLimit = 0
    var stopped = false
    /// How many holders have taken a thread so far.
    var holding = 0
    /// How many probe jobs have run, and how many were sent.
    var probesRun = 0
    var probesSent = 0
    /// The same for the main actor's probes.
    var mainProbesRun = 0
    var mainProbesSent = 0
    /// The kernel's ids of the pool threads that probes ran on, and of those held.
    var poolThreads: Set<Int32> = []
    var heldThreads: Set<Int32> = []
  }

  init(patience: Duration) { self.patience = patience }

  /// How many threads the pool has: libdispatch gives Swift's cooperative pool one per
  /// active processor.
  static var width: Int { ProcessInfo.processInfo.activeProcessorCount }

  /// Takes every thread of the pool but one (fewer when some are already taken: a probe
  /// must still run after each one is held), returns, and then watches: `onBlocked` runs
  /// once, on the watchdog's thread, when a probe has not started within `patience`.
  func holdAllButOne(onBlocked: @escaping @Sendable (Blocked) -> Void) async {
    await withCheckedContinuation { (ready: CheckedContinuation<Void, Never>) in
      let thread = Thread { [self] in
        ReorderedJobs.markThisThreadAsWatchdog()
        holdThreads()
        ready.resume()
        watch(onBlocked: onBlocked)
      }
      thread.name = "PoolOfOne watchdog"
      thread.start()
    }
  }

  private func holdThreads() {
    for index in 0..<max(0, Self.width - 1) {
      state.withLock { $0.holdLimit = index + 1 }
      Task.detached { [self] in hold(index) }
      let taken = wait(upTo: .milliseconds(300)) { $0.holding > index }
      // A thread is left free only when a probe can still run (given a second: other tests
      // may keep the free threads busy for a moment).
      if !taken || !probeRuns(within: .seconds(1)) {
        release(from: index)
        return
      }
    }
  }

  /// Blocks its pool thread on purpose, while `index` is below the hold limit.
  private func hold(_ index: Int) {
    condition.lock()
    defer { condition.unlock() }
    let thread = currentThreadID()
    state.withLock {
      $0.holding += 1
      if let thread { $0.heldThreads.insert(thread) }
    }
    while state.withLock({ !$0.stopped && index < $0.holdLimit }) { condition.wait() }
  }

  /// Lets the holders numbered `index` and up go.
  private func release(from index: Int) {
    state.withLock { $0.holdLimit = min($0.holdLimit, index) }
    condition.lock()
    condition.broadcast()
    condition.unlock()
  }

  /// True once ``stop()`` has been called.
  var isStopped: Bool { state.withLock { $0.stopped } }

  /// Lets every held thread go and ends the watch; idempotent.
  func stop() {
    state.withLock { $0.stopped = true }
    release(from: 0)
  }

  /// Sends one probe job and waits for it to start.
  private func probeRuns(within limit: Duration) -> Bool {
    let sent = state.withLock { state -> Int in
      state.probesSent += 1
      return state.probesSent
    }
    Task.detached { [self] in
      let thread = currentThreadID()
      state.withLock {
        $0.probesRun += 1
        if let thread { $0.poolThreads.insert(thread) }
      }
    }
    if wait(upTo: limit, until: { $0.probesRun >= sent }) { return true }
    // Not blocked while the free thread is runnable: it is computing, or waiting for a core
    // on a machine busier than it has cores for. A blocked thread sleeps in the kernel (a
    // semaphore, a lock, a read). Given a few more rounds, never for ever: a thread that
    // computes without end holds the pool too.
    var rounds = 0
    while rounds < 3, aFreePoolThreadIsRunnable() {
      rounds += 1
      if wait(upTo: limit, until: { $0.probesRun >= sent }) { return true }
    }
    return false
  }

  /// True when a pool thread that the squeeze does not hold is runnable, as the kernel
  /// says (`/proc/self/task/ID/stat`, Linux); false where that cannot be known.
  private func aFreePoolThreadIsRunnable() -> Bool {
    #if os(Linux)
    let (pool, held) = state.withLock { ($0.poolThreads, $0.heldThreads) }
    for thread in pool.subtracting(held) {
      guard
        let stat = try? String(
          contentsOfFile: "/proc/self/task/\(thread)/stat", encoding: .utf8),
        let nameEnd = stat.lastIndex(of: ")")
      else { continue }
      if stat[stat.index(after: nameEnd)...].drop(while: { $0 == " " }).first == "R" {
        return true
      }
    }
    #endif
    return false
  }

  /// Waits on this (non-pool) thread until `condition` holds or `limit` of this thread's
  /// runnable time has passed (a late wake-up counts as little more than its slice, so a
  /// starved machine does not look like a blocked pool).
  private func wait(upTo limit: Duration, until condition: (State) -> Bool) -> Bool {
    let clock = ContinuousClock()
    let slice = Duration.milliseconds(1)
    var waited = Duration.zero
    while waited < limit {
      if state.withLock({ condition($0) }) { return true }
      if state.withLock({ $0.stopped }) { return false }
      let before = clock.now
      Thread.sleep(forTimeInterval: 0.001)
      waited += min(clock.now - before, slice * 10)
    }
    return state.withLock { condition($0) }
  }

  /// A probe at a time, on the pool and on the main actor, until `stop()`; `onBlocked`
  /// once when one does not start in time.
  private func watch(onBlocked: @Sendable (Blocked) -> Void) {
    while !state.withLock({ $0.stopped }) {
      let main = state.withLock { state -> Int in
        state.mainProbesSent += 1
        return state.mainProbesSent
      }
      Task { @MainActor [self] in state.withLock { $0.mainProbesRun += 1 } }
      let poolRan = probeRuns(within: patience)
      let mainRan = poolRan && wait(upTo: patience) { $0.mainProbesRun >= main }
      if !poolRan || !mainRan {
        if state.withLock({ $0.stopped }) { return }
        stop()
        onBlocked(poolRan ? .mainActor : .pool)
        return
      }
      Thread.sleep(forTimeInterval: 0.01)
    }
  }

}

/// The kernel's id of the calling thread (Linux), to read its state in `/proc`.
private func currentThreadID() -> Int32? {
  #if os(Linux)
  // The first field of the thread's own stat is its id (Swift cannot call gettid here).
  guard let stat = try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)
  else { return nil }
  return Int32(stat.prefix { $0 != " " })
  #else
  return nil
  #endif
}
