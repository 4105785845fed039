// The learner's loop: for every exercise of workbook.json, how long `make check
// EXERCISE=N.K` takes after a save with the solution in place, and how long the first
// `make check CHAPTER=1` takes on a fresh clone. scripts/bench-loop.sh does the work in a
// scratch clone (so the learner's own tree is never touched) and writes one line per
// timing; this reads them into rows, each with its goal (issues 12 and 17): every exercise
// ≤ 5 s, the median over the exercises ≤ 2 s, the cold first check ≤ 20 s on a quiet
// machine (the same check with busy loops running is reported without a goal).

import Foundation

/// The goals the rows are held to, in seconds.
enum LoopGoal {
  static let everyExercise = 5.0
  static let medianExercise = 2.0
  static let coldCheck = 20.0
}

/// Times the loop with scripts/bench-loop.sh, or reads the timings of an earlier run of it
/// (`from`, written by its `--raw`).
func measureLearnerLoop(
  root: URL, runs: Int, from earlier: URL? = nil
) -> (entries: [Entry], notes: [String]) {
  let text: String
  if let earlier {
    guard let saved = try? String(contentsOf: earlier, encoding: .utf8), !saved.isEmpty else {
      return ([], ["The learner's loop was not read: \(earlier.path) is missing or empty."])
    }
    text = saved
  } else {
    let script = root.appendingPathComponent("scripts/bench-loop.sh")
    let raw = FileManager.default.temporaryDirectory
      .appendingPathComponent("workbook-bench-loop-\(getpid()).txt")
    defer { try? FileManager.default.removeItem(at: raw) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["bash", script.path, "--runs", String(runs), "--raw", raw.path]
    process.currentDirectoryURL = root
    // The script's summary goes to stderr with its progress: the table says the same.
    process.standardOutput = FileHandle.standardError
    do {
      try process.run()
    } catch {
      let note = "The learner's loop was not measured: could not start \(script.path): \(error)."
      return ([], [note])
    }
    process.waitUntilExit()
    let timed = (try? String(contentsOf: raw, encoding: .utf8)) ?? ""
    guard process.terminationStatus == 0, !timed.isEmpty else {
      let note =
        "The learner's loop was not measured: scripts/bench-loop.sh exited with status "
        + "\(process.terminationStatus) (its messages are above)."
      return ([], [note])
    }
    text = timed
  }
  return learnerLoopRows(text)
}

/// The rows and notes for the timings `text` (scripts/bench-loop.sh's `--raw` lines).
func learnerLoopRows(_ text: String) -> (entries: [Entry], notes: [String]) {
  let group = "The learner's loop"

  var cold: [Double] = []
  var coldBusy: [(seconds: Double, loops: String)] = []
  var order: [String] = []
  var warm: [String: [Double]] = [:]
  var notPassed: [String] = []
  var loads: [String: String] = [:]
  var measured: [String: String] = [:]
  for line in text.split(separator: "\n") {
    let words = line.split(separator: " ").map(String.init)
    switch words.first {
    case "cold" where words.count == 2:
      if let value = Double(words[1]) { cold.append(value) }
    case "coldbusy" where words.count == 3:
      if let value = Double(words[1]) { coldBusy.append((value, words[2])) }
    case "warm" where words.count == 4:
      guard let value = Double(words[2]) else { continue }
      if warm[words[1]] == nil { order.append(words[1]) }
      warm[words[1], default: []].append(value)
      if words[3] != "passed" { notPassed.append("\(words[1]) (\(words[3]))") }
    case "load" where words.count == 5:
      loads[words[1]] = words[2...4].joined(separator: ", ")
    case "commit" where words.count == 2, "date" where words.count == 2:
      measured[words[0]] = words[1]
    default:
      continue
    }
  }

  func goal(_ value: Double, _ limit: Double) -> String {
    let seconds = limit == limit.rounded() ? String(Int(limit)) : String(limit)
    return value <= limit ? "goal ≤ \(seconds) s: met" : "goal ≤ \(seconds) s: **MISSED**"
  }

  var entries: [Entry] = []
  if !cold.isEmpty {
    var entry = Entry(
      group: group, configuration: "first make check CHAPTER=1 on a fresh clone",
      variant: "builds runner + Chapter 1 at once, grades", unit: .seconds)
    entry.samples = cold
    entry.versus = goal(entry.median, LoopGoal.coldCheck) + " (one run)"
    entries.append(entry)
  }
  for (seconds, loops) in coldBusy {
    var entry = Entry(
      group: group, configuration: "the same, with \(loops) busy loops running",
      variant: "builds runner + Chapter 1 at once, grades", unit: .seconds)
    entry.samples = [seconds]
    entry.versus = "no goal: what a busy machine costs (one run)"
    entries.append(entry)
  }
  let medians = order.map { id in (id, quantile(warm[id] ?? [], 0.5)) }
  if !medians.isEmpty {
    let saved = "a save → make check EXERCISE=N.K verdict, solution in place"
    var overall = Entry(
      group: group, configuration: saved,
      variant: "median over the \(medians.count) exercises", unit: .seconds)
    overall.samples = medians.map(\.1)
    overall.versus =
      goal(overall.median, LoopGoal.medianExercise) + "; min–max: the exercises' medians"
    entries.append(overall)
    for (id, median) in medians {
      var entry = Entry(group: group, configuration: "", variant: "exercise \(id)", unit: .seconds)
      entry.samples = warm[id] ?? []
      entry.versus = goal(median, LoopGoal.everyExercise)
      entries.append(entry)
    }
  }

  var notes: [String] = []
  if let slowest = medians.max(by: { $0.1 < $1.1 }) {
    let missed = medians.filter { $0.1 > LoopGoal.everyExercise }.map(\.0)
    notes.append(
      "The learner's loop: the slowest exercise, \(slowest.0), takes \(Unit.seconds.format(slowest.1)) "
        + "(median of its runs); "
        + (missed.isEmpty
          ? "every exercise is within \(Int(LoopGoal.everyExercise)) s."
          : "over \(Int(LoopGoal.everyExercise)) s: \(missed.joined(separator: ", ")).")
        + " Load average during the loop (1, 5, 15 min): \(loads["start"] ?? "?") at its start, "
        + "\(loads["end"] ?? "?") at its end"
        + (measured.isEmpty
          ? "."
          : "; timed at commit \(measured["commit"] ?? "?") on \(measured["date"] ?? "?")."))
  }
  if !notPassed.isEmpty {
    notes.append(
      "The learner's loop: these runs did not pass, so they are not a passing attempt's "
        + "timings: \(notPassed.joined(separator: ", ")).")
  }
  return (entries, notes)
}
