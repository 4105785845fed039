// The solution's `Promise` (Chapter 5, exercise 5.2): how long fulfilling it takes when many
// tasks wait, and what awaiting an already fulfilled promise costs.
//
// For the first, a floor to compare with: the same number of tasks, each suspended on a bare
// checked continuation kept in an array, all resumed in a loop. The promise cannot be faster
// than that; the difference is what its bookkeeping (a dictionary of awaiters, cancellation
// handlers) costs.

import Synchronization

/// Continuations parked by many tasks, resumed together: the floor for ``Promise``.
final class BareWaiters: Sendable {
  private let parked = Mutex<[CheckedContinuation<Int, Never>]>([])

  var count: Int { parked.withLock { $0.count } }

  func wait() async -> Int {
    await withCheckedContinuation { continuation in
      parked.withLock { $0.append(continuation) }
    }
  }

  func resumeAll(with value: Int) {
    let all = parked.withLock { parked in
      defer { parked.removeAll() }
      return parked
    }
    for continuation in all { continuation.resume(returning: value) }
  }
}

/// Seconds from `succeed` until all `awaiters` tasks have their value.
func fulfilPromise(awaiters: Int) async throws -> Double {
  let promise = Promise<Int>()
  return try await withThrowingTaskGroup(of: Int.self) { group in
    for _ in 0..<awaiters {
      group.addTask { try await promise.value }
    }
    while promise.waitingCount < awaiters { await Task.yield() }
    var total = 0
    let elapsed = try await timed {
      promise.succeed(1)
      for try await value in group { total += value }
    }
    guard total == awaiters else { fail("\(total) of \(awaiters) awaiters got the promise's value") }
    return elapsed
  }
}

/// Seconds from the first resume until all `awaiters` tasks have their value.
func resumeBareContinuations(awaiters: Int) async -> Double {
  let waiters = BareWaiters()
  return await withTaskGroup(of: Int.self) { group in
    for _ in 0..<awaiters {
      group.addTask { await waiters.wait() }
    }
    while waiters.count < awaiters { await Task.yield() }
    var total = 0
    let elapsed = await timed {
      waiters.resumeAll(with: 1)
      for await value in group { total += value }
    }
    guard total == awaiters else { fail("\(total) of \(awaiters) continuations were resumed") }
    return elapsed
  }
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

func measurePromise(awaiters: Int, awaits: Int, runs: Int) async throws -> [Entry] {
  let group = "Promise (solution)"
  let fulfil = "fulfil with \(awaiters.formatted()) awaiters (fulfil until all resumed)"
  var promiseRow = Entry(
    group: group, configuration: fulfil, variant: "Promise (solution)", unit: .milliseconds)
  var floorRow = Entry(
    group: group, configuration: fulfil, variant: "bare continuations, resumed in a loop (floor)",
    unit: .milliseconds)
  var awaitRow = Entry(
    group: group, configuration: "await after fulfilment (\(awaits.formatted()) awaits a run)",
    variant: "Promise (solution)", unit: .nanoseconds)
  Progress.say("promise: warming up")
  _ = try await fulfilPromise(awaiters: awaiters)
  _ = await resumeBareContinuations(awaiters: awaiters)
  _ = try await awaitFulfilled(times: awaits)
  for run in 0..<runs {
    Progress.say("promise: run \(run + 1) of \(runs)")
    if run.isMultiple(of: 2) {
      promiseRow.samples.append(try await fulfilPromise(awaiters: awaiters) * 1e3)
      floorRow.samples.append(await resumeBareContinuations(awaiters: awaiters) * 1e3)
    } else {
      floorRow.samples.append(await resumeBareContinuations(awaiters: awaiters) * 1e3)
      promiseRow.samples.append(try await fulfilPromise(awaiters: awaiters) * 1e3)
    }
    awaitRow.samples.append(try await awaitFulfilled(times: awaits))
  }
  promiseRow.versus = ratio(promiseRow, to: floorRow, name: "the floor")
  floorRow.versus = "reference"
  awaitRow.versus = "no suspension: the value is read under the lock"
  return [promiseRow, floorRow, awaitRow]
}
