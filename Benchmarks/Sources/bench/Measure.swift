// The pieces every benchmark shares: timing, statistics, one row of the table, progress.

import Foundation

/// Keeps results alive so the optimiser cannot drop the work that produced them.
nonisolated(unsafe) var sink = 0

@inline(never)
func consume(_ value: Int) {
  sink &+= value
}

/// Seconds in a `Duration`, as a `Double`.
func seconds(_ duration: Duration) -> Double {
  let (whole, attoseconds) = duration.components
  return Double(whole) + Double(attoseconds) / 1e18
}

/// How long `work` takes, in seconds, on the continuous clock.
func timed(_ work: () async throws -> Void) async rethrows -> Double {
  let clock = ContinuousClock()
  let start = clock.now
  try await work()
  return seconds(clock.now - start)
}

/// The value below which `fraction` of `values` lie, interpolating between neighbours.
func quantile(_ values: [Double], _ fraction: Double) -> Double {
  let sorted = values.sorted()
  guard !sorted.isEmpty else { return .nan }
  let position = fraction * Double(sorted.count - 1)
  let below = Int(position.rounded(.down))
  let above = min(below + 1, sorted.count - 1)
  let weight = position - Double(below)
  return sorted[below] * (1 - weight) + sorted[above] * weight
}

func median(_ values: [Double]) -> Double {
  quantile(values, 0.5)
}

/// What a row measures, which decides how its numbers are printed and which way is better.
enum Unit: Sendable {
  /// Messages per second; higher is better.
  case messagesPerSecond
  /// Nanoseconds per operation; lower is better.
  case nanoseconds
  /// Milliseconds of wall time; lower is better.
  case milliseconds
  /// Seconds of wall time; lower is better.
  case seconds
  /// Mebibytes of peak resident memory; lower is better.
  case mebibytes

  var higherIsBetter: Bool {
    if case .messagesPerSecond = self { return true }
    return false
  }

  func format(_ value: Double) -> String {
    guard value.isFinite else { return "–" }
    switch self {
    case .messagesPerSecond:
      return value >= 1e6
        ? String(format: "%.2f M/s", value / 1e6) : String(format: "%.0f k/s", value / 1e3)
    case .nanoseconds:
      return value >= 1000 ? String(format: "%.0f ns", value) : String(format: "%.1f ns", value)
    case .milliseconds:
      return value >= 100 ? String(format: "%.0f ms", value) : String(format: "%.1f ms", value)
    case .seconds:
      return value < 10 ? String(format: "%.2f s", value) : String(format: "%.1f s", value)
    case .mebibytes:
      return String(format: "%.1f MiB", value)
    }
  }

  /// The number alone, without its unit, for the low end of a range.
  func formatBare(_ value: Double) -> String {
    let text = format(value)
    return text.split(separator: " ").first.map(String.init) ?? text
  }
}

/// One line of the table: a variant of a benchmark, and the value of each run.
struct Entry: Sendable {
  /// The benchmark the row belongs to, such as "Channel throughput, 1,000,000 Ints".
  var group: String
  /// The configuration, such as "1 producer × 1 consumer, rendezvous".
  var configuration: String
  /// What is measured in it, such as "Channel (solution)".
  var variant: String
  var unit: Unit
  /// One value per run.
  var samples: [Double] = []
  /// Why there is no number, when the variant cannot do this configuration: a footnote
  /// marker and its text.
  var notApplicable: Footnote?
  /// How this variant compares with another in the same configuration, written once all
  /// runs are in.
  var versus = ""

  var median: Double { quantile(samples, 0.5) }
  var low: Double { samples.min() ?? .nan }
  var high: Double { samples.max() ?? .nan }

  /// Half the interquartile range, as a share of the median: robust to one slow run.
  var spread: Double {
    let middle = median
    guard middle > 0, samples.count > 1 else { return .nan }
    return (quantile(samples, 0.75) - quantile(samples, 0.25)) / 2 / middle
  }

  var medianText: String {
    notApplicable.map { "n/a \($0.marker)" } ?? unit.format(median)
  }

  var rangeText: String {
    guard notApplicable == nil, !samples.isEmpty else { return "" }
    return "\(unit.formatBare(low))–\(unit.format(high))"
  }

  var spreadText: String {
    guard notApplicable == nil, spread.isFinite else { return "" }
    return String(format: "±%.0f%%", spread * 100)
  }
}

struct Footnote: Sendable, Equatable {
  var marker: String
  var text: String
}

/// How `entry` compares with `reference` in words: "0.62× AsyncChannel (38% less
/// throughput)", or "2.5× as long as tasks". Empty when either has no numbers.
func ratio(_ entry: Entry, to reference: Entry, name: String) -> String {
  guard entry.notApplicable == nil, reference.notApplicable == nil,
    !entry.samples.isEmpty, !reference.samples.isEmpty, reference.median > 0
  else { return "" }
  let ratio = entry.median / reference.median
  let better = entry.unit.higherIsBetter ? ratio > 1 : ratio < 1
  let factor = ratio >= 1 ? ratio : 1 / ratio
  let how: String
  if abs(ratio - 1) < 0.03 {
    how = "level"
  } else if entry.unit.higherIsBetter {
    how = better ? String(format: "%.2f× faster", factor) : String(format: "%.2f× slower", factor)
  } else if case .mebibytes = entry.unit {
    how = better ? String(format: "%.2f× less", factor) : String(format: "%.2f× more", factor)
  } else {
    how = better ? String(format: "%.2f× faster", factor) : String(format: "%.2f× slower", factor)
  }
  return String(format: "%.2f× %@ (%@)", ratio, name, how)
}

// MARK: - Progress

/// Progress goes to stderr, so the table on stdout stays clean; dimmed on a terminal unless
/// NO_COLOR is set.
enum Progress {
  static let dim = isatty(2) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil

  static func say(_ message: String) {
    let line = dim ? "\u{1B}[2m\(message)\u{1B}[0m\n" : "\(message)\n"
    FileHandle.standardError.write(Data(line.utf8))
  }
}

/// Stops the benchmark with a message on stderr: for results that prove the code under test
/// wrong (a lost message), where a number would be meaningless.
func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("bench: \(message)\n".utf8))
  exit(1)
}
