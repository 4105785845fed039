import Foundation

extension App {
  /// `workbook mutate [--chapter N | --exercise ID] [--limit N] [--survivors] [--write-report]`: grades
  /// the mutants of the selected solutions (``MutationRunner``), prints one line per exercise
  /// as it finishes (and its unexplained survivors), and a total. Exit status 1 while any
  /// survivor is unexplained or a solution itself does not pass.
  static func mutate(
    _ invocation: Invocation, root: URL, terminal: Terminal
  ) throws(WorkbookError) -> Int32 {
    let workbook = try MetadataLoader.load(root: root)
    let selection = try select(invocation, in: workbook)
    var report = try MutationReport.load(root: root)
    let progress = MutationProgress(status: StatusLine(enabled: terminal.progress, plain: true))
    var runner = MutationRunner(
      root: root, timeout: invocation.timeout, jobs: invocation.jobs, limit: invocation.limit,
      report: report, progress: progress)
    runner.survivorsOnly = invocation.survivorsOnly
    progress.start()
    // Ctrl-C: no status line drawn after the interrupt handler's message.
    let stopping = InterruptCleanup.add { progress.stop() }
    let tallies: [MutationTally]
    do {
      tallies = try runner.run(selection) { tally in
        progress.print(tally.lines(terminal: terminal).joined(separator: "\n"))
      }
    } catch {
      progress.stop()
      throw error
    }
    InterruptCleanup.remove(stopping)
    progress.stop()

    let graded = tallies.filter { $0.baseline == nil }
    let mutants = graded.map(\.graded.count).reduce(0, +)
    let survivors = graded.map(\.survivors.count).reduce(0, +)
    let broken = tallies.count - graded.count
    Output.out(
      "mutate: \(mutants) mutants in \(graded.count) exercise\(graded.count == 1 ? "" : "s"): "
        + "\(graded.map(\.killed).reduce(0, +)) killed, "
        + "\(graded.map(\.notCompiled).reduce(0, +)) not compiled, "
        + "\(graded.map(\.equivalent.count).reduce(0, +)) equivalent, "
        + "\(survivors) unexplained survivor\(survivors == 1 ? "" : "s")"
        + (broken > 0 ? "; \(broken) solution\(broken == 1 ? "" : "s") not passing" : ""))
    if invocation.writeReport {
      for tally in tallies { report.record(tally) }
      try report.write(root: root)
      Output.out(
        "mutate: wrote \(MutationReport.path) for \(graded.map(\.exercise.id).joined(separator: ", "))"
      )
    } else if survivors > 0 {
      Output.out(
        terminal.paint(
          "explain each survivor in \(MutationReport.path) (--write-report adds them) or "
            + "add a test that catches it", .dim))
    }
    return survivors == 0 && broken == 0 ? 0 : 1
  }
}
