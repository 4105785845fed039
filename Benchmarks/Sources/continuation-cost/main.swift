// continuation-cost: what one bridge from a callback to `await` costs, with a checked and
// with an unsafe continuation, measured side by side in one run.
//
// A "bridge" is one `await with…Continuation { c in legacyCall { c.resume(returning:) } }`:
// creating the continuation, calling the legacy API, resuming, and carrying on. Two kinds
// of legacy API are measured: one that answers inside the call (a cache, an in-memory
// sensor), where the bridge is nearly all there is, and one that answers from another
// thread, where the task really suspends and a thread hands the value back.
//
// Every row is timed several times, alternating the two variants so that neither gets a
// warmer machine, and the table shows the median and the spread of the runs.

import Dispatch
import Foundation

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
  private let queue = DispatchQueue(label: "continuation-cost.gauge")

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

/// Keeps results alive so the optimiser cannot drop the work that produced them.
nonisolated(unsafe) var sink = 0

@inline(never)
func consume(_ value: Int) {
  sink &+= value
}

/// One row of the table: a scenario, a variant, and a loop that makes `count` bridges.
struct Row {
  var scenario: String
  var variant: String
  var bridgesPerRun: Int
  var loop: @Sendable (_ count: Int) async -> Int
  var nanoseconds: [Double] = []
}

/// Makes `row.bridgesPerRun` bridges and returns the mean cost of one, in nanoseconds.
func time(_ row: Row) async -> Double {
  let clock = ContinuousClock()
  let start = clock.now
  consume(await row.loop(row.bridgesPerRun))
  let elapsed = clock.now - start
  let (seconds, attoseconds) = elapsed.components
  let total = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
  return total / Double(row.bridgesPerRun)
}

/// `count` bridges in a row, each awaited before the next starts.
func repeatedly(_ count: Int, _ bridge: () async -> Int) async -> Int {
  var total = 0
  for _ in 0..<count {
    total &+= await bridge()
  }
  return total
}

/// The value below which `fraction` of `values` lie, interpolating between neighbours.
func quantile(_ values: [Double], _ fraction: Double) -> Double {
  let sorted = values.sorted()
  guard !sorted.isEmpty else { return 0 }
  let position = fraction * Double(sorted.count - 1)
  let below = Int(position.rounded(.down))
  let above = min(below + 1, sorted.count - 1)
  let weight = position - Double(below)
  return sorted[below] * (1 - weight) + sorted[above] * weight
}

func median(_ values: [Double]) -> Double {
  quantile(values, 0.5)
}

func measure(runs: Int) async -> [Row] {
  let instant = InstantGauge()
  let queued = QueuedGauge()
  let inside = "answered inside the call"
  let elsewhere = "answered on another thread"
  var rows = [
    Row(scenario: inside, variant: "checked", bridgesPerRun: 500_000) { count in
      await repeatedly(count) { await checkedBridge(instant) }
    },
    Row(scenario: inside, variant: "unsafe", bridgesPerRun: 500_000) { count in
      await repeatedly(count) { await unsafeBridge(instant) }
    },
    Row(scenario: elsewhere, variant: "checked", bridgesPerRun: 10_000) { count in
      await repeatedly(count) { await checkedBridge(queued) }
    },
    Row(scenario: elsewhere, variant: "unsafe", bridgesPerRun: 10_000) { count in
      await repeatedly(count) { await unsafeBridge(queued) }
    },
  ]
  // One untimed run of each row first: page faults, lazy binding and cold caches belong
  // to no variant.
  for row in rows { _ = await time(row) }
  for run in 0..<runs {
    // Alternate which variant of each pair goes first.
    let order = run.isMultiple(of: 2) ? [0, 1, 2, 3] : [1, 0, 3, 2]
    for index in order {
      rows[index].nanoseconds.append(await time(rows[index]))
    }
  }
  return rows
}

// MARK: - Reporting

func format(_ value: Double) -> String {
  value >= 1000 ? String(format: "%.0f", value) : String(format: "%.1f", value)
}

func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
  let padding = String(repeating: " ", count: max(0, width - text.count))
  return right ? padding + text : text + padding
}

func swiftVersion() -> String {
  #if compiler(>=7.0)
  "7.0 or later"
  #elseif compiler(>=6.4)
  "6.4"
  #elseif compiler(>=6.3.3)
  "6.3.3"
  #elseif compiler(>=6.3.2)
  "6.3.2"
  #elseif compiler(>=6.3.1)
  "6.3.1"
  #elseif compiler(>=6.3)
  "6.3"
  #else
  "older than 6.3"
  #endif
}

func platform() -> String {
  #if os(Linux)
  let system = "Linux"
  #elseif os(macOS)
  let system = "macOS"
  #else
  let system = "an unknown system"
  #endif
  #if arch(x86_64)
  let architecture = "x86_64"
  #elseif arch(arm64)
  let architecture = "arm64"
  #else
  let architecture = "another architecture"
  #endif
  return "\(system) \(architecture)"
}

func report(_ rows: [Row], runs: Int) {
  #if DEBUG
  let build = "DEBUG build: the numbers mean little; use `make bench`"
  #else
  let build = "release build"
  #endif
  let cores = ProcessInfo.processInfo.activeProcessorCount
  print("continuation-cost: what one bridge (await + resume) costs, in nanoseconds")
  print("machine: \(cores) cores, \(platform()), Swift \(swiftVersion()), \(build)")
  print("\(runs) runs per row, alternating the variants; each run times many bridges")
  print()
  let header = [
    pad("scenario", 28), pad("variant", 8), pad("bridges/run", 11, right: true),
    pad("median", 8, right: true), pad("min", 8, right: true), pad("max", 8, right: true),
    pad("spread", 6, right: true),
  ]
  print(header.joined(separator: "  "))
  print(String(repeating: "-", count: header.joined(separator: "  ").count))
  for row in rows {
    let middle = median(row.nanoseconds)
    let low = row.nanoseconds.min() ?? 0
    let high = row.nanoseconds.max() ?? 0
    // The middle half of the runs, as a share of the median: robust to one slow run.
    let spread =
      middle > 0
      ? (quantile(row.nanoseconds, 0.75) - quantile(row.nanoseconds, 0.25)) / middle * 100 : 0
    let cells = [
      pad(row.scenario, 28), pad(row.variant, 8),
      pad(row.bridgesPerRun.formatted(), 11, right: true),
      pad(format(middle), 8, right: true), pad(format(low), 8, right: true),
      pad(format(high), 8, right: true), pad(String(format: "±%.0f%%", spread / 2), 6, right: true),
    ]
    print(cells.joined(separator: "  "))
  }
  print()
  for pair in stride(from: 0, to: rows.count, by: 2) {
    let checked = rows[pair].nanoseconds
    let unsafe = rows[pair + 1].nanoseconds
    let extra = median(checked) - median(unsafe)
    let share = median(checked) > 0 ? extra / median(checked) * 100 : 0
    // When the middle halves of the runs overlap, the difference is within the noise.
    let overlap = quantile(checked, 0.25) <= quantile(unsafe, 0.75)
    let verdict =
      overlap
      ? "within the noise between runs"
      : String(format: "%.0f%% of the checked bridge's cost", share)
    print("\(rows[pair].scenario): the checks add \(format(extra)) ns per bridge, \(verdict)")
  }
  print("(spread: half the interquartile range of the runs, as a share of the median)")
}

let runs = 11
let rows = await measure(runs: runs)
report(rows, runs: runs)
