// The table on stdout and the same results, with the machine, in RESULTS.md.

import Foundation

struct Results {
  var machine: Machine
  var loadAtStart: String
  var loadAtEnd: String
  var runs: String
  var entries: [Entry]
  var notes: [String]
  var quick: Bool

  var footnotes: [Footnote] {
    var seen: [Footnote] = []
    for entry in entries {
      if let note = entry.notApplicable, !seen.contains(note) { seen.append(note) }
    }
    return seen
  }

  /// Where the solution is worse than what it is compared with, and by how much; and where
  /// it is not, so that the reader sees both.
  var verdicts: [String] {
    var lines: [String] = []
    let configurations = entries.reduce(into: [String]()) { names, entry in
      let name = "\(entry.group) / \(entry.configuration)"
      if !names.contains(name) { names.append(name) }
    }
    for name in configurations {
      let rows = entries.filter { "\($0.group) / \($0.configuration)" == name }
      guard let reference = rows.first(where: { $0.versus == "reference" }),
        reference.notApplicable == nil, !reference.samples.isEmpty
      else { continue }
      for row in rows where row.variant != reference.variant && row.notApplicable == nil {
        let solutionIsRow = row.variant.lowercased().contains("solution")
        let solutionIsReference = reference.variant.lowercased().contains("solution")
        guard solutionIsRow || solutionIsReference, !row.samples.isEmpty else { continue }
        let (ours, theirs) = solutionIsRow ? (row, reference) : (reference, row)
        let ratio = ours.median / theirs.median
        let worse = ours.unit.higherIsBetter ? ratio < 0.97 : ratio > 1.03
        let better = ours.unit.higherIsBetter ? ratio > 1.03 : ratio < 0.97
        let factor = ratio >= 1 ? ratio : 1 / ratio
        let word: String
        switch (ours.unit, worse) {
        case (.messagesPerSecond, true): word = String(format: "%.2f× slower", factor)
        case (.messagesPerSecond, false): word = String(format: "%.2f× faster", factor)
        case (.mebibytes, true): word = String(format: "%.2f× more memory", factor)
        case (.mebibytes, false): word = String(format: "%.2f× less memory", factor)
        case (_, true): word = String(format: "takes %.2f× as long", factor)
        case (_, false): word = String(format: "%.2f× faster", factor)
        }
        let what =
          "\(ours.group), \(ours.configuration): \(ours.variant) \(ours.unit.format(ours.median)) against \(theirs.variant) \(theirs.unit.format(theirs.median))"
        if worse {
          lines.append("**loses**: \(what): \(word).")
        } else if better {
          lines.append("wins: \(what): \(word).")
        } else {
          lines.append("level: \(what): within 3%.")
        }
      }
    }
    return lines
  }
}

private func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
  let padding = String(repeating: " ", count: max(0, width - text.count))
  return right ? padding + text : text + padding
}

func groupHeading(_ entry: Entry) -> String {
  let direction = entry.unit.higherIsBetter ? "higher is better" : "lower is better"
  return "\(entry.group) (\(direction))"
}

func printTable(_ results: Results) {
  let machine = results.machine
  print("Swift Concurrency workbook benchmarks\(results.quick ? " (QUICK: fewer runs)" : "")")
  print("machine: \(machine.cpu), \(machine.cores) cores, \(machine.memory); \(machine.system)")
  print("\(machine.swift); release build; commit \(machine.commit); \(machine.date)")
  print("load average at start \(results.loadAtStart); at end \(results.loadAtEnd)")
  print("runs per row: \(results.runs)")
  print()
  let headers = ["configuration", "variant", "median", "min–max", "spread", "comparison"]
  let rows = results.entries.map { entry in
    [
      entry.configuration, entry.variant, entry.medianText, entry.rangeText, entry.spreadText,
      entry.versus,
    ]
  }
  var widths = headers.map(\.count)
  for row in rows {
    for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
  }
  func line(_ cells: [String]) -> String {
    cells.enumerated().map { column, cell in
      pad(cell, widths[column], right: column >= 2 && column <= 4)
    }
    .joined(separator: "  ").replacingOccurrences(
      of: "\\s+$", with: "", options: .regularExpression)
  }
  print(line(headers))
  print(String(repeating: "-", count: widths.reduce(0, +) + 2 * (widths.count - 1)))
  var group = ""
  var configuration = ""
  for (entry, row) in zip(results.entries, rows) {
    if entry.group != group {
      if !group.isEmpty { print() }
      print(groupHeading(entry))
      group = entry.group
      configuration = ""
    }
    var cells = row
    if entry.configuration == configuration { cells[0] = "" }
    configuration = entry.configuration
    print(line(cells))
  }
  print()
  for note in results.footnotes { print("\(note.marker) \(note.text)") }
  for note in results.notes { print("note: \(note)") }
  print("(spread: half the interquartile range of the runs, as a share of the median)")
  print()
  for verdict in results.verdicts { print(verdict.replacingOccurrences(of: "**", with: "")) }
}

/// The machine, the verdicts, the table and the notes, under headings of `level` ("##").
func markdownBody(_ results: Results, level: String) -> String {
  let machine = results.machine
  var text = """
    \(level) Machine

    | | |
    | --- | --- |
    | CPU | \(machine.cpu) |
    | cores | \(machine.cores) |
    | memory | \(machine.memory) |
    | system | \(machine.system) |
    | Swift | \(machine.swift) |
    | date | \(machine.date) |
    | commit | \(machine.commit) |
    | load average at start (1, 5, 15 min) | \(results.loadAtStart) |
    | load average at end | \(results.loadAtEnd) |
    | runs per row | \(results.runs) |

    \(level) Where the solutions lose, and where they win


    """
  for verdict in results.verdicts { text += "- \(verdict)\n" }
  if results.verdicts.isEmpty {
    text += "- No row of this run compares a solution with anything.\n"
  }
  text += """

    \(level) The table

    | configuration | variant | median | min–max | spread | comparison |
    | --- | --- | ---: | ---: | ---: | --- |

    """
  var group = ""
  var configuration = ""
  for entry in results.entries {
    if entry.group != group {
      text += "| **\(groupHeading(entry))** | | | | | |\n"
      group = entry.group
      configuration = ""
    }
    let name = entry.configuration == configuration ? "" : entry.configuration
    configuration = entry.configuration
    let cells = [
      name, entry.variant, entry.medianText, entry.rangeText, entry.spreadText, entry.versus,
    ]
    text +=
      "| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ")
      + " |\n"
  }
  text += "\n"
  for note in results.footnotes { text += "\(note.marker) \(note.text)\n\n" }
  if !results.notes.isEmpty {
    text += "\(level) Notes\n\n"
    for note in results.notes { text += "- \(note)\n" }
    text += "\n"
  }
  return text
}

/// A section for a later run of some rows (`make bench` with `--only … --append-to`), put
/// in front of "What each row measures" in an existing RESULTS.md.
func markdownRerun(_ results: Results, groups: [String], into existing: String) -> String {
  let section =
    "## A later run of some rows: \(groups.joined(separator: ", "))\n\n"
    + "The same benchmark, run again for these rows only (`bench --only "
    + "\(groups.joined(separator: ",")) --append-to …`), for instance when the full run above "
    + "met a busy machine. The full run's figures above are left as they were.\n\n"
    + markdownBody(results, level: "###")
  guard let range = existing.range(of: "## What each row measures") else {
    return existing + "\n" + section
  }
  return existing.replacingCharacters(in: range.lowerBound..<range.lowerBound, with: section)
}

func markdown(_ results: Results) -> String {
  var text = """
    # Benchmark results

    Written by `make bench` (Benchmarks/, release build) from one full run; do not edit by \
    hand, run `make bench` again. Every row of a configuration was measured side by side in \
    that run, the variants taking turns, and each figure is the median of several runs, with \
    the smallest and largest run and the spread (half the interquartile range, as a share of \
    the median).


    """
  text += markdownBody(results, level: "##")
  text += """
    ## What each row measures

    - **Channel throughput**: 1,000,000 `Int`s from the producers to the consumers, each run \
    checked for lost or repeated messages (count and sum). The solution's `Channel` is \
    Solutions/06-Channels/02-BuildAChannel.swift itself, compiled into the benchmark through \
    a symbolic link. swift-async-algorithms' `AsyncChannel` is a rendezvous only; its \
    buffered forms are `AsyncChannel` read through `.buffer(policy:)`, which adds a task that \
    pulls ahead. The ratio is to `AsyncChannel` in that form.
    - **Continuation cost**: one `await with…Continuation { legacy call { resume } }`, with a \
    checked and with an unsafe continuation, for a legacy API that answers inside the call and \
    for one that answers from a Dispatch queue.
    - **Promise**: Solutions/05-Futures/02-BuildAPromise.swift, linked the same way. Fulfil: \
    the time from `succeed` until every one of the waiting tasks has its value, with the \
    awaiters started as a `Task` each and as the children of one task group. The floor is the \
    same number of tasks on bare checked continuations, resumed in a loop in the order they \
    arrived; in the task group, the same floor resumed in a shuffled order shows what the \
    order alone costs there. Await after fulfilment: the fast path, no suspension.
    - **Migration payoff**: each variant in a child process of its own (the benchmark started \
    again with `--child`), so each peak of resident memory (VmHWM) belongs to one variant. \
    Wall time covers starting every waiter, fulfilling the promise once all wait, and every \
    waiter finishing. Coroutines are Support/CoroutineKit (a thread each, blocked in \
    `CoPromise.await()`); tasks are a `Task` each, waiting on the solution's `Promise`.
    - **The learner's loop**: scripts/bench-loop.sh (`make bench-loop` runs it alone) in a \
    scratch clone of the commit above: the first `make check CHAPTER=1` on the fresh clone \
    (goal ≤ 30 s), then every solution copied into Chapters/ (a passing attempt runs every \
    test), and for every exercise of workbook.json, chapter by chapter, a save of its file (a \
    comment line added at the top) followed by `make check EXERCISE=N.K` until its verdict \
    is printed, several rounds (goals: every exercise ≤ 5 s, the median over the exercises \
    ≤ 2 s). Each chapter is built once before its exercises are timed. Each exercise's row \
    shows the median of its runs and, in min–max, its fastest and slowest run. The clone is \
    removed afterwards.

    """
  return text
}
