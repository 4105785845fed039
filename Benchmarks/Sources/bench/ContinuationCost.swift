// Continuation cost: what one bridge from a callback to `await` costs, with a checked and
// with an unsafe continuation (exercise 3.3), measured side by side.
//
// A "bridge" is one `await with…Continuation { c in legacyCall { c.resume(returning:) } }`:
// creating the continuation, calling the legacy API, resuming, and carrying on. Two kinds
// of legacy API are measured: one that answers inside the call (a cache, an in-memory
// sensor), where the bridge is nearly all there is, and one that answers from another
// thread, where the task really suspends and a thread hands the value back.

import Dispatch

// MARK: - The legacy APIs being bridged

/// Answers inside the call, like a cache that already has the value.
final class InstantGauge: @unchecked Sendable {
  private var reading = 0

  @inline(never)
  func read(completion: @escaping (Int) -> Void) {
    reading &+= 1
    completion(reading)
  }
}

/// Answers from a Dispatch queue, like most callback APIs do.
final class QueuedGauge: @unchecked Sendable {
  private let queue = DispatchQueue(label: "bench.gauge")

  @inline(never)
  func read(completion: @escaping @Sendable (Int) -> Void) {
    queue.async { completion(1) }
  }
}

// MARK: - The two bridges

@inline(never)
func checkedBridge(_ gauge: InstantGauge) async -> Int {
  await withCheckedContinuation { continuation in
    gauge.read { continuation.resume(returning: $0) }
  }
}

@inline(never)
func unsafeBridge(_ gauge: InstantGauge) async -> Int {
  await withUnsafeContinuation { continuation in
    gauge.read { continuation.resume(returning: $0) }
  }
}

@inline(never)
func checkedBridge(_ gauge: QueuedGauge) async -> Int {
  await withCheckedContinuation { continuation in
    gauge.read { continuation.resume(returning: $0) }
  }
}

@inline(never)
func unsafeBridge(_ gauge: QueuedGauge) async -> Int {
  await withUnsafeContinuation { continuation in
    gauge.read { continuation.resume(returning: $0) }
  }
}

// MARK: - Measuring

/// `count` bridges in a row, each awaited before the next starts.
func repeatedly(_ count: Int, _ bridge: () async -> Int) async -> Int {
  var total = 0
  for _ in 0..<count {
    total &+= await bridge()
  }
  return total
}

private struct Bridge {
  var configuration: String
  var variant: String
  var perRun: Int
  var loop: @Sendable (_ count: Int) async -> Int
}

/// Nanoseconds per bridge for each scenario and variant; the two variants of a scenario
/// alternate which goes first, so that neither always gets the warmer machine.
func measureContinuations(runs: Int) async -> [Entry] {
  let instant = InstantGauge()
  let queued = QueuedGauge()
  let inside = "answered inside the call"
  let elsewhere = "answered on another thread (a Dispatch queue)"
  let bridges = [
    Bridge(configuration: inside, variant: "checked", perRun: 500_000) { count in
      await repeatedly(count) { await checkedBridge(instant) }
    },
    Bridge(configuration: inside, variant: "unsafe", perRun: 500_000) { count in
      await repeatedly(count) { await unsafeBridge(instant) }
    },
    Bridge(configuration: elsewhere, variant: "checked", perRun: 20_000) { count in
      await repeatedly(count) { await checkedBridge(queued) }
    },
    Bridge(configuration: elsewhere, variant: "unsafe", perRun: 20_000) { count in
      await repeatedly(count) { await unsafeBridge(queued) }
    },
  ]
  var rows = bridges.map { bridge in
    Entry(
      group: "Continuation cost, ns per bridge", configuration: bridge.configuration,
      variant: "\(bridge.variant) (\(bridge.perRun.formatted()) bridges a run)",
      unit: .nanoseconds)
  }
  func time(_ bridge: Bridge) async -> Double {
    var total = 0
    let elapsed = await timed { total = await bridge.loop(bridge.perRun) }
    consume(total)
    return elapsed * 1e9 / Double(bridge.perRun)
  }
  Progress.say("continuations: warming up")
  // Page faults, lazy binding and cold caches belong to no variant.
  for bridge in bridges { _ = await time(bridge) }
  for run in 0..<runs {
    Progress.say("continuations: run \(run + 1) of \(runs)")
    let order = run.isMultiple(of: 2) ? [0, 1, 2, 3] : [1, 0, 3, 2]
    for index in order {
      rows[index].samples.append(await time(bridges[index]))
    }
  }
  for pair in stride(from: 0, to: rows.count, by: 2) {
    let checked = rows[pair]
    let unsafe = rows[pair + 1]
    let extra = checked.median - unsafe.median
    // When the middle halves of the runs overlap, the difference is within the noise.
    let overlap =
      quantile(checked.samples, 0.25) <= quantile(unsafe.samples, 0.75)
      && quantile(unsafe.samples, 0.25) <= quantile(checked.samples, 0.75)
    let share = abs(extra) / checked.median * 100
    let difference =
      extra >= 0
      ? String(format: "checks add %@ (%.0f%%)", Unit.nanoseconds.format(extra), share)
      : String(format: "checked %@ faster (%.0f%%)", Unit.nanoseconds.format(-extra), share)
    rows[pair].versus = difference + (overlap ? ", within the noise" : "")
    rows[pair + 1].versus = "reference"
  }
  return rows
}
