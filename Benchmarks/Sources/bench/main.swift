// `make bench`: every benchmark of the workbook, one table. See Package.swift.
//
//   bench [--quick] [--only GROUP,…] [--root PATH] [--results FILE | --append-to FILE]
//         [--loop-from FILE]
//       --quick     fewer runs, and no learner's loop (it builds every chapter in a scratch
//                   clone; `make bench-loop` runs it alone)
//       --only      just these groups: channels, continuations, promise, migration, loop
//                   (for looking into one; --results is then ignored)
//       --root      the workbook's root (default: the current directory)
//       --results   also write the results as Markdown to FILE (ignored with --quick,
//                   so the committed file always comes from a full run)
//       --append-to with --only: add this run as a section of its own to FILE, an
//                   existing RESULTS.md (say, the fast rows again on a quieter machine)
//       --loop-from the learner's loop as timed before by `scripts/bench-loop.sh --raw FILE`
//                   (`make bench-loop` keeps it in Benchmarks/.build/loop-timings.txt),
//                   instead of timing it again
//   bench --child coroutines|tasks|idle COUNT
//       one variant of the migration benchmark; the benchmark starts itself this way

import Foundation

func usage(_ problem: String) -> Never {
  FileHandle.standardError.write(
    Data(
      """
      bench: \(problem)
      usage: bench [--quick] [--only GROUP,…] [--root PATH] [--results FILE | --append-to FILE]
                   [--loop-from FILE]
             bench --child coroutines|tasks|idle COUNT

      """.utf8))
  exit(2)
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--child" {
  guard arguments.count == 3, let mode = ChildMode(rawValue: arguments[1]),
    let count = Int(arguments[2]), count >= 0
  else { usage("--child needs a mode (coroutines, tasks or idle) and a count") }
  try await runChild(mode, count: count)
  exit(0)
}

var quick = false
let groups = ["channels", "continuations", "promise", "migration", "loop"]
var only = Set(groups)
var root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
var resultsFile: URL?
var appendFile: URL?
var loopFrom: URL?
while !arguments.isEmpty {
  let argument = arguments.removeFirst()
  switch argument {
  case "--quick":
    quick = true
  case "--only":
    guard !arguments.isEmpty else {
      usage("--only needs groups, from: \(groups.joined(separator: ", "))")
    }
    only = Set(arguments.removeFirst().split(separator: ",").map(String.init))
    if let unknown = only.first(where: { !groups.contains($0) }) {
      usage("no group \(unknown); the groups are \(groups.joined(separator: ", "))")
    }
  case "--root":
    guard !arguments.isEmpty else { usage("--root needs a path") }
    root = URL(fileURLWithPath: arguments.removeFirst())
  case "--append-to":
    guard !arguments.isEmpty else { usage("--append-to needs a file") }
    appendFile = URL(fileURLWithPath: arguments.removeFirst())
  case "--loop-from":
    guard !arguments.isEmpty else { usage("--loop-from needs a file") }
    loopFrom = URL(fileURLWithPath: arguments.removeFirst())
  case "--results":
    guard !arguments.isEmpty else { usage("--results needs a file") }
    resultsFile = URL(fileURLWithPath: arguments.removeFirst())
  default:
    usage("unknown argument \(argument)")
  }
}

#if DEBUG
Progress.say("bench: this is a DEBUG build and its numbers mean little; use `make bench`")
#endif

let machine = Machine.describe(root: root)
let loadAtStart = loadAverage()
Progress.say("bench: load average \(loadAtStart) on \(machine.cores) cores")
if loadOneMinute() > Double(machine.cores) / 2 {
  Progress.say("bench: the machine is busy; the numbers will be noisier than usual")
}

let channelRuns = quick ? 3 : 5
let continuationRuns = quick ? 3 : 9
let promiseRuns = quick ? 3 : 9
let migrationRuns = quick ? 1 : 3
let loopRuns = 3

var entries: [Entry] = []
var notes: [String] = []
var runs: [String] = []
if only.contains("channels") {
  entries += try await measureChannels(count: 1_000_000, runs: channelRuns)
  runs.append("channels \(channelRuns)")
}
if only.contains("continuations") {
  entries += await measureContinuations(runs: continuationRuns)
  runs.append("continuations \(continuationRuns)")
}
if only.contains("promise") {
  let promise = try await measurePromise(awaiters: 10_000, awaits: 1_000_000, runs: promiseRuns)
  entries += promise.entries
  notes += promise.notes
  runs.append("promise \(promiseRuns)")
}
if only.contains("migration") {
  let migration = measureMigration(count: 10_000, runs: migrationRuns)
  entries += migration.entries
  notes += migration.notes
  runs.append("migration \(migrationRuns) child processes a variant")
}
if only.contains("loop") && quick {
  notes.append("QUICK run: the learner's loop was skipped (run `make bench` without QUICK).")
} else if only.contains("loop") {
  let loop = measureLearnerLoop(root: root, runs: loopRuns, from: loopFrom)
  entries += loop.entries
  notes += loop.notes
  runs.append(
    loopFrom == nil
      ? "learner's loop \(loopRuns) per exercise (cold: 1)"
      : "learner's loop as timed in \(loopFrom?.lastPathComponent ?? "")")
}
let partial = quick || only.count < groups.count
// Busy: more than half a runnable process per core over the last minute, at either end.
let loadAtStartOneMinute = Double(loadAtStart.split(separator: ",").first ?? "") ?? 0
if max(loadAtStartOneMinute, loadOneMinute()) > Double(machine.cores) / 2 {
  notes.append(
    "The machine was busy (load average \(loadAtStart) at the start, \(loadAverage()) at the "
      + "end, on \(machine.cores) cores): other work shared the cores, so the figures are lower "
      + "and noisier than a quiet machine would give. Ratios of rows measured side by side "
      + "suffer less than the absolute figures.")
}

let results = Results(
  machine: machine, loadAtStart: loadAtStart, loadAtEnd: loadAverage(),
  runs: runs.joined(separator: ", "),
  entries: entries, notes: notes, quick: quick)
printTable(results)
if let appendFile {
  guard !quick, only.count < groups.count else {
    Progress.say("bench: --append-to is for a run with --only and without --quick; nothing written")
    exit(1)
  }
  do {
    let existing = try String(contentsOf: appendFile, encoding: .utf8)
    let chosen = groups.filter { only.contains($0) }
    try markdownRerun(results, groups: chosen, into: existing)
      .write(to: appendFile, atomically: true, encoding: .utf8)
    Progress.say("bench: added this run to \(appendFile.path)")
  } catch {
    Progress.say("bench: could not add this run to \(appendFile.path): \(error)")
    exit(1)
  }
}
if let resultsFile {
  if partial {
    Progress.say("bench: not a full run, so \(resultsFile.path) is left as it was")
  } else {
    do {
      try markdown(results).write(to: resultsFile, atomically: true, encoding: .utf8)
      Progress.say("bench: wrote \(resultsFile.path)")
    } catch {
      Progress.say("bench: could not write \(resultsFile.path): \(error)")
      exit(1)
    }
  }
}
