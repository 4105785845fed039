import Foundation
import Synchronization

/// Makes a race that a program loses once in thousands of runs come out within a few hundred
/// rounds: it fires an action (a cancel, say) from a thread of its own a tuned time after
/// the learner's code reaches a step the test can see (the anchor), and after each round it
/// moves that time toward the point where the round's outcome flips (did the learner's code
/// see the action, or did the action find the learner's work already done?). A gap between
/// a check and the act that depends on it (a lock taken twice where once was needed) is
/// exactly at that point, so the rounds keep landing in it.
///
/// The two threads are pinned to two different processors while they race, when the
/// process may use two: a thread that spins waiting for the other on the same processor
/// would only let it run once preempted, and the timing would be lost. Nothing here decides
/// whether an answer is right: a correct one gives the same outcome wherever the action
/// lands, and the test says what it expects.
public final class RaceAimer: Sendable {
  /// When the armed action is due (nanoseconds, monotonic clock), or 0 when none is armed.
  private let due = Atomic(0)
  private let action = Mutex<(@Sendable () -> Void)?>(nil)
  /// How long after the due time the anchor holds the learner's thread (nanoseconds): the
  /// value that is tuned.
  private let hold: Atomic<Int>
  /// The last outcome, and how many rounds in a row it came: the hold moves faster the
  /// longer the outcome stays the same, so it finds the flip from far away, and slows down
  /// to the smallest step once it flips back and forth there.
  private let streak = Mutex<(actionCameFirst: Bool, rounds: Int)>((false, 0))
  private let stopped = Atomic(false)
  private let processors: (learner: Int, aimer: Int)?

  /// How far ahead of the anchor the action is due, so the aimer's thread is ready for it.
  private static let lead = 2_000
  /// How far each round moves the hold, and how much it is jittered by.
  private static let step = 8

  public init(initialHold: Int = 250) {
    hold = Atomic(initialHold)
    let allowed = Affinity.allowedProcessors()
    processors = allowed.count >= 2 ? (allowed[0], allowed[1]) : nil
    let thread = Thread { [self] in fireLoop() }
    thread.name = "RaceAimer"
    thread.start()
  }

  /// Ends the aimer's thread; call it when the race is over.
  public func stop() { stopped.store(true, ordering: .relaxed) }

  /// On the learner's thread, at the anchor: arms `action` for a moment from now, then holds
  /// this thread until the tuned time after it, and lets the learner's code go on.
  public func anchor(fire action: @escaping @Sendable () -> Void) {
    let previous = processors.flatMap { Affinity.pinCurrentThread(to: $0.learner) }
    // The thread's processors are given back before the final wait, so that nothing slow
    // comes between the release and the learner's next step.
    previous.map(Affinity.restoreCurrentThread)
    let fireAt = Self.now() + Self.lead
    let release = fireAt + hold.load(ordering: .relaxed) + Int.random(in: -Self.step...Self.step)
    self.action.withLock { $0 = action }
    due.store(fireAt, ordering: .releasing)
    while Self.now() < release {}
  }

  /// What the last round showed: `true` when the learner's code saw the action (it came
  /// too early to find the gap), `false` when the action found the learner's step done (too
  /// late). The next round aims a little the other way.
  public func learn(actionCameFirst: Bool) {
    let rounds = streak.withLock { streak in
      streak.rounds = streak.actionCameFirst == actionCameFirst ? streak.rounds + 1 : 0
      streak.actionCameFirst = actionCameFirst
      return streak.rounds
    }
    let move = Self.step << min(rounds / 2, 8)
    if actionCameFirst {
      hold.subtract(move, ordering: .relaxed)
    } else {
      hold.add(move, ordering: .relaxed)
    }
  }

  private func fireLoop() {
    if let processors { _ = Affinity.pinCurrentThread(to: processors.aimer) }
    while !stopped.load(ordering: .relaxed) {
      let fireAt = due.load(ordering: .acquiring)
      guard fireAt != 0 else {
        sched_yield()
        continue
      }
      due.store(0, ordering: .relaxed)
      let action = self.action.withLock { $0.take() }
      while Self.now() < fireAt {}
      action?()
    }
  }

  private static func now() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
  }
}

/// Makes two threads race from the same instant: each, at a step the test can see (its
/// anchor), waits for the other, and both go on at a shared time, the second party `lag`
/// nanoseconds later (or earlier, when negative); after each round the lag moves toward the
/// point where the outcome flips, as ``RaceAimer``'s hold does. For two copies of the same
/// code (two streams of one client, say), whose gap between a check and its act then meet.
public final class Rendezvous: Sendable {
  private let arrived = Atomic(0)
  private let left = Atomic(0)
  private let startAt = Atomic(0)
  private let lag = Atomic(0)
  private let streak = Mutex<(secondCameFirst: Bool, rounds: Int)>((false, 0))
  private let processors: [Int]

  /// How long the parties wait for each other before going on alone, in nanoseconds.
  private static let patience = 50_000_000
  private static let lead = 2_000
  private static let step = 8

  public init() {
    let allowed = Affinity.allowedProcessors()
    processors = allowed.count >= 2 ? Array(allowed.prefix(2)) : []
  }

  /// Readies the next round; call it once every party of the last one has gone on.
  public func reset() {
    arrived.store(0, ordering: .sequentiallyConsistent)
    left.store(0, ordering: .sequentiallyConsistent)
    startAt.store(0, ordering: .sequentiallyConsistent)
  }

  /// Whether every party that arrived this round has gone on again.
  public var isOver: Bool {
    let arrived = arrived.load(ordering: .sequentiallyConsistent)
    return arrived > 0 && left.load(ordering: .sequentiallyConsistent) == arrived
  }

  /// On a party's thread, at its anchor: `party` is 0 or 1.
  public func arrive(as party: Int) {
    let previous = processors.isEmpty ? nil : Affinity.pinCurrentThread(to: processors[party])
    defer { left.add(1, ordering: .sequentiallyConsistent) }
    let (_, count) = arrived.add(1, ordering: .sequentiallyConsistent)
    if count == 2 {
      startAt.store(now() + Self.lead, ordering: .sequentiallyConsistent)
    }
    let giveUp = now() + Self.patience
    var start = startAt.load(ordering: .sequentiallyConsistent)
    while start == 0, now() < giveUp {
      start = startAt.load(ordering: .sequentiallyConsistent)
    }
    // The thread's processors are given back before the final wait, so that nothing slow
    // comes between the release and the learner's next step.
    previous.map(Affinity.restoreCurrentThread)
    guard start != 0 else { return }
    let release = start + (party == 1 ? lag.load(ordering: .relaxed) : 0)
    while now() < release {}
  }

  /// What the round showed: whether the second party's act came first.
  public func learn(secondCameFirst: Bool) {
    let rounds = streak.withLock { streak in
      streak.rounds = streak.secondCameFirst == secondCameFirst ? streak.rounds + 1 : 0
      streak.secondCameFirst = secondCameFirst
      return streak.rounds
    }
    let move = (Self.step << min(rounds / 2, 8)) + Int.random(in: 0...Self.step)
    if secondCameFirst {
      lag.add(move, ordering: .relaxed)
    } else {
      lag.subtract(move, ordering: .relaxed)
    }
  }

  private func now() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
  }
}

/// Which processors a thread may run on, through glibc's `sched_getaffinity` and
/// `sched_setaffinity` (looked up at run time: Swift's Glibc module leaves them out). Elsewhere
/// no thread is pinned, and the races are aimed all the same, less sharply.
private enum Affinity {
  #if os(Linux)
  typealias Processors = cpu_set_t
  typealias Call = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32

  static func call(_ name: String) -> Call? {
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), name).map { unsafeBitCast($0, to: Call.self) }
  }

  static func current() -> cpu_set_t? {
    guard let get = call("sched_getaffinity") else { return nil }
    var set = cpu_set_t()
    let status = withUnsafeMutableBytes(of: &set) {
      get(0, MemoryLayout<cpu_set_t>.size, $0.baseAddress!)
    }
    return status == 0 ? set : nil
  }

  static func allowedProcessors() -> [Int] {
    guard let set = current() else { return [] }
    return withUnsafeBytes(of: set) { bytes in
      (0..<(bytes.count * 8)).filter { bytes[$0 / 8] & (1 << ($0 % 8)) != 0 }
    }
  }

  /// Pins the calling thread to `processor`; returns the set to restore, or nil if it
  /// could not.
  static func pinCurrentThread(to processor: Int) -> cpu_set_t? {
    guard let previous = current(), let set = call("sched_setaffinity") else { return nil }
    var only = cpu_set_t()
    withUnsafeMutableBytes(of: &only) { $0[processor / 8] = 1 << (processor % 8) }
    let status = withUnsafeMutableBytes(of: &only) {
      set(0, MemoryLayout<cpu_set_t>.size, $0.baseAddress!)
    }
    return status == 0 ? previous : nil
  }

  static func restoreCurrentThread(_ previous: cpu_set_t) {
    guard let set = call("sched_setaffinity") else { return }
    var previous = previous
    _ = withUnsafeMutableBytes(of: &previous) {
      set(0, MemoryLayout<cpu_set_t>.size, $0.baseAddress!)
    }
  }
  #else
  struct Processors {}

  static func allowedProcessors() -> [Int] { [] }
  static func pinCurrentThread(to processor: Int) -> Processors? { nil }
  static func restoreCurrentThread(_ previous: Processors) {}
  #endif
}
