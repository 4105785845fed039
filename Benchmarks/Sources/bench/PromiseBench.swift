// The solution's `Promise` (Chapter 5, exercise 5.2): how long fulfilling it takes when many
// tasks wait, and what awaiting an already fulfilled promise costs.
//
// For fulfilment, a floor to compare with: the same number of tasks, each suspended on a
// bare checked continuation kept in an array, all resumed in a loop in the order they
// arrived. The promise cannot beat that; the difference is what its bookkeeping costs.
//
// The awaiters are measured two ways. As separate tasks, the time is the promise's and the
// tasks'. As children of one task group, the runtime's bookkeeping for the group adds a cost
// that depends on the order in which children finish: first-come-first-resumed is cheap,
// any other order is much dearer. The promise resumes its awaiters in the order they
// arrived; a third variant, the floor resumed in a shuffled order, shows what any other
// order would cost.

import Synchronization

/// Continuations parked by many tasks, resumed together: the floor for ``Promise``.
final class BareWaiters: Sendable {
  private let parked = Mutex<[CheckedContinuation<Int, any Error>]>([])

  var count: Int { parked.withLock { $0.count } }

  func wait() async throws -> Int {
    try await withCheckedThrowingContinuation { continuation in
      parked.withLock { $0.append(continuation) }
    }
  }

  /// Resumes everyone, in the order they arrived or shuffled.
  func resumeAll(with value: Int, shuffled: Bool) {
    var all = parked.withLock { parked in
      defer { parked.removeAll() }
      return parked
    }
    if shuffled { all.shuffle() }
    for continuation in all { continuation.resume(returning: value) }
  }
}

/// Counts finished tasks down to zero and wakes whoever waits for that.
final class Countdown: Sendable {
  private let state: Mutex<(left: Int, total: Int, waiter: CheckedContinuation<Int, Never>?)>

  init(_ count: Int) {
    state = Mutex((count, 0, nil))
  }

  func arrive(with value: Int) {
    let waiter = state.withLock { state -> CheckedContinuation<Int, Never>? in
      state.left -= 1
      state.total += value
      guard state.left == 0 else { return nil }
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume(returning: state.withLock { $0.total })
  }

  /// The sum of the values, once every task has arrived.
  func wait() async -> Int {
    await withCheckedContinuation { continuation in
      let total = state.withLock { state -> Int? in
        if state.left == 0 { return state.total }
        state.waiter = continuation
        return nil
      }
      if let total { continuation.resume(returning: total) }
    }
  }
}

/// How the awaiters are started.
enum Awaiters {
  /// `Task { … }` each.
  case separateTasks
  /// Children of one `withThrowingTaskGroup`.
  case taskGroup
}

/// Seconds from `release` until all `count` awaiters, each running `wait`, are done; the
/// awaiters start first, and `release` runs once `waiting()` says all of them wait.
func fulfilment(
  _ count: Int, as awaiters: Awaiters, wait: @escaping @Sendable () async throws -> Int,
  waiting: () -> Int, release: () -> Void
) async throws -> Double {
  var total = 0
  let elapsed: Double
  switch awaiters {
  case .separateTasks:
    let countdown = Countdown(count)
    for _ in 0..<count {
      Task { countdown.arrive(with: (try? await wait()) ?? 0) }
    }
    while waiting() < count { await Task.yield() }
    elapsed = await timed {
      release()
      total = await countdown.wait()
    }
  case .taskGroup:
    elapsed = try await withThrowingTaskGroup(of: Int.self) { group in
      for _ in 0..<count {
        group.addTask { try await wait() }
      }
      while waiting() < count { await Task.yield() }
      return try await timed {
        release()
        for try await value in group { total += value }
      }
    }
  }
  guard total == count else { fail("\(total) of \(count) awaiters got their value") }
  return elapsed
}

func fulfilPromise(_ count: Int, as awaiters: Awaiters) async throws -> Double {
  let promise = Promise<Int>()
  return try await fulfilment(
    count, as: awaiters, wait: { try await promise.value }, waiting: { promise.waitingCount },
    release: { promise.succeed(1) })
}

func resumeBare(_ count: Int, as awaiters: Awaiters, shuffled: Bool) async throws -> Double {
  let waiters = BareWaiters()
  return try await fulfilment(
    count, as: awaiters, wait: { try await waiters.wait() }, waiting: { waiters.count },
    release: { waiters.resumeAll(with: 1, shuffled: shuffled) })
}

/// Nanoseconds per `await promise.value` on a promise that already has its value.
func awaitFulfilled(times: Int) async throws -> Double {
  let promise = Promise<Int>()
  promise.succeed(1)
  var total = 0
  let elapsed = try await timed {
    for _ in 0..<times {
      total &+= try await promise.value
    }
  }
  guard total == times else { fail("awaiting a fulfilled promise gave the wrong value") }
  return elapsed * 1e9 / Double(times)
}

func measurePromise(
  awaiters count: Int, awaits: Int, runs: Int
) async throws -> (
  entries: [Entry], notes: [String]
) {
  let group = "Promise (solution)"
  let separate = "fulfil → all \(count.formatted()) awaiters resumed; a Task each"
  let children = "fulfil → all \(count.formatted()) awaiters resumed; one task group"
  let promiseName = "Promise (solution)"
  let floorName = "bare continuations, arrival order (floor)"
  struct Variant {
    var entry: Entry
    var run: () async throws -> Double
  }
  var variants = [
    Variant(
      entry: Entry(group: group, configuration: separate, variant: promiseName, unit: .milliseconds)
    ) {
      try await fulfilPromise(count, as: .separateTasks)
    },
    Variant(
      entry: Entry(group: group, configuration: separate, variant: floorName, unit: .milliseconds)
    ) {
      try await resumeBare(count, as: .separateTasks, shuffled: false)
    },
    Variant(
      entry: Entry(group: group, configuration: children, variant: promiseName, unit: .milliseconds)
    ) {
      try await fulfilPromise(count, as: .taskGroup)
    },
    Variant(
      entry: Entry(group: group, configuration: children, variant: floorName, unit: .milliseconds)
    ) {
      try await resumeBare(count, as: .taskGroup, shuffled: false)
    },
    Variant(
      entry: Entry(
        group: group, configuration: children, variant: "bare continuations, shuffled order",
        unit: .milliseconds)
    ) {
      try await resumeBare(count, as: .taskGroup, shuffled: true)
    },
  ]
  var awaitRow = Entry(
    group: group, configuration: "await after fulfilment (\(awaits.formatted()) awaits a run)",
    variant: promiseName, unit: .nanoseconds)
  Progress.say("promise: warming up")
  for variant in variants { _ = try await variant.run() }
  _ = try await awaitFulfilled(times: awaits)
  for run in 0..<runs {
    Progress.say("promise: run \(run + 1) of \(runs)")
    let order = run.isMultiple(of: 2) ? Array(variants.indices) : variants.indices.reversed()
    for index in order {
      variants[index].entry.samples.append(try await variants[index].run() * 1e3)
    }
    awaitRow.samples.append(try await awaitFulfilled(times: awaits))
  }
  var entries = variants.map(\.entry)
  entries[0].versus = ratio(entries[0], to: entries[1], name: "the floor")
  entries[1].versus = "reference"
  entries[2].versus = ratio(entries[2], to: entries[3], name: "the floor")
  entries[3].versus = "reference"
  entries[4].versus = ratio(entries[4], to: entries[3], name: "the floor")
  awaitRow.versus = "fast path: no continuation, one lock"
  let note = String(
    format: "In a task group, order is most of it: the floor resumed in a shuffled order takes "
      + "%@ against %@ in arrival order; the Promise, which resumes in arrival order too, "
      + "%@. As separate tasks the same Promise takes %@.",
    Unit.milliseconds.format(entries[4].median), Unit.milliseconds.format(entries[3].median),
    Unit.milliseconds.format(entries[2].median), Unit.milliseconds.format(entries[0].median))
  return (entries + [awaitRow], [note])
}
