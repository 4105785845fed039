import Foundation

/// `workbook mutate`: for each selected exercise, every mutant of its solution
/// (``MutationGenerator``) graded by the exercise's tests in a scratch copy of the package,
/// `.build-mutants/` (its own, so that it never writes into the copy a `mistakes` run may be
/// using at the same time).
///
/// Per chapter: the solutions as written are graded first (an exercise whose solution does
/// not pass has nothing to learn from mutants); then rounds of at most one mutant per
/// exercise (``MutationRound``), so a chapter of six exercises needs about as many builds
/// as its exercise with the most mutants. An exercise is reported as soon as its last
/// mutant is graded.
public struct MutationRunner: Sendable {
  public static let folder = ".build-mutants"

  public var root: URL
  public var timeout: Double
  public var jobs: Int
  /// At most this many mutants per exercise (the first ones, in line order).
  public var limit: Int?
  /// Only the survivors the report leaves unexplained, where its section is current.
  public var survivorsOnly = false
  /// The committed report: which survivors are known equivalents.
  public var report: MutationReport
  var progress: MutationProgress

  init(
    root: URL, timeout: Double, jobs: Int, limit: Int?, report: MutationReport,
    progress: MutationProgress
  ) {
    self.root = root
    self.timeout = timeout
    self.jobs = max(1, jobs)
    self.limit = limit
    self.report = report
    self.progress = progress
  }

  /// Grades the mutants of `selection`, calling `finished` with each exercise once it is
  /// done; returns every exercise's tally in workbook order.
  func run(
    _ selection: [(chapter: Chapter, exercises: [Exercise])],
    finished: (MutationTally) -> Void
  ) throws(WorkbookError) -> [MutationTally] {
    let tree = VariantTree(root: root, folder: Self.folder)
    progress.phase("copying the package into \(Self.folder)…")
    try tree.sync()
    let cleanup = InterruptCleanup.add { tree.restore(closing: true) }
    defer {
      tree.restore()
      InterruptCleanup.remove(cleanup)
    }
    var all: [MutationTally] = []
    for (chapter, exercises) in selection where !exercises.isEmpty {
      all += try run(chapter, exercises, tree: tree, finished: finished)
    }
    return all
  }

  func run(
    _ chapter: Chapter, _ exercises: [Exercise], tree: VariantTree,
    finished: (MutationTally) -> Void
  ) throws(WorkbookError) -> [MutationTally] {
    var sources: [String: String] = [:]
    var tallies: [MutationTally] = []
    for exercise in exercises {
      let path = chapter.solutionPath(exercise)
      let source =
        (try? String(contentsOf: tree.tree.appendingPathComponent(path), encoding: .utf8)) ?? ""
      sources[exercise.id] = source
      let mutants = MutationGenerator.mutants(of: source)
      let digest = Digest.of(string: source)
      var graded = limit.map { Array(mutants.prefix($0)) } ?? mutants
      var earlierCounts: String?
      // Only where the report's counts are for these very mutants: the same solution, and
      // the same number of mutants (the generator may have changed since).
      if survivorsOnly,
        let section = report.sections.first(where: { $0.exerciseID == exercise.id }),
        section.digest == digest, MutationTally.total(in: section.graded) == mutants.count
      {
        let unexplained = Set(section.entries.filter { $0.reason == nil }.map(\.id))
        graded = mutants.filter { unexplained.contains($0.id) }
        earlierCounts = section.graded
      }
      var tally = MutationTally(
        chapter: chapter, exercise: exercise, solution: path, digest: digest, mutants: mutants,
        graded: graded, explained: report.explained(exercise.id))
      tally.earlierCounts = earlierCounts
      tallies.append(tally)
    }
    progress.expect(tallies.map(\.graded.count).reduce(0, +))
    let round = MutationRound(
      chapter: chapter, tree: tree, timeout: timeout, jobs: jobs,
      dependencies: MutationDependencies(chapter: chapter, root: tree.tree), progress: progress)

    let baseline = try round.baseline(exercises)
    var reported: Set<String> = []
    for index in tallies.indices {
      let grade =
        baseline?[tallies[index].exercise.id]
        ?? Grade(.doesNotCompile, ["the chapter's solutions do not build"])
      guard grade.verdict != .passed else { continue }
      tallies[index].baseline = grade
      progress.expect(-tallies[index].graded.count)
    }

    let queues = tallies.map { $0.baseline == nil ? $0.graded : [] }
    let rounds = queues.map(\.count).max() ?? 0
    func reportFinished() {
      for tally in tallies where tally.isFinished && !reported.contains(tally.exercise.id) {
        reported.insert(tally.exercise.id)
        finished(tally)
      }
    }
    reportFinished()
    for index in 0..<rounds {
      let entries = tallies.indices.compactMap { which -> MutationRound.Entry? in
        guard index < queues[which].count else { return nil }
        let mutant = queues[which][index]
        let exercise = tallies[which].exercise
        return MutationRound.Entry(
          mutant: mutant, exercise: exercise, path: tallies[which].solution,
          content: Data(mutant.apply(to: sources[exercise.id] ?? "").utf8))
      }
      let outcomes = try round.run(
        entries, title: "chapter \(chapter.number), round \(index + 1) of \(rounds)")
      var survivors = 0
      for entry in entries {
        guard let which = tallies.firstIndex(where: { $0.exercise.id == entry.exercise.id })
        else { continue }
        let outcome = outcomes[entry.key] ?? .killed(.failed)
        tallies[which].outcomes[entry.mutant.id] = outcome
        if outcome == .survived, !tallies[which].explained.contains(entry.mutant.id) {
          survivors += 1
        }
      }
      progress.graded(entries.count, survivors: survivors)
      reportFinished()
    }
    return tallies
  }
}
