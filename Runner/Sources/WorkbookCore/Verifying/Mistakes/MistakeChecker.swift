import Dispatch
import Foundation
import Synchronization

/// One mistake or alternative of an exercise, as `workbook mistakes` checks it.
public struct Variant: Sendable, Equatable {
  public enum Kind: String, Sendable {
    case mistake, alternative
  }

  public var kind: Kind
  public var name: String
  public var source: String
  /// The verdict it must get: the mistake's, or `passed` for an alternative.
  public var expected: Verdict
  /// What the verdict's details must contain (mistakes only).
  public var phrase: String?
  public var exerciseID: String
  /// The notes a noted alternative must earn; it, and any other alternative, must earn no
  /// other caution note.
  public var notes: [String]

  public init(
    kind: Kind, name: String, source: String, expected: Verdict, phrase: String?,
    exerciseID: String, notes: [String] = []
  ) {
    self.kind = kind
    self.name = name
    self.source = source
    self.expected = expected
    self.phrase = phrase
    self.exerciseID = exerciseID
    self.notes = notes
  }

  /// `1.2 mistake "resumes only on .success"`.
  public var label: String { "\(exerciseID) \(kind.rawValue) \"\(name)\"" }

  /// The exercise's mistakes, then its alternatives, in workbook order. A mistake with an
  /// unknown verdict expects `failed` (verify's metadata check reports it).
  public static func all(of exercise: Exercise) -> [Variant] {
    exercise.mistakes.map {
      Variant(
        kind: .mistake, name: $0.name, source: $0.source,
        expected: Verdict(rawValue: $0.verdict) ?? .failed, phrase: $0.phrase,
        exerciseID: exercise.id)
    }
      + exercise.alternatives.map {
        Variant(
          kind: .alternative, name: $0.name, source: $0.source, expected: .passed, phrase: nil,
          exerciseID: exercise.id, notes: $0.notes ?? [])
      }
  }
}

/// How one variant was graded.
public struct VariantOutcome: Sendable, Equatable {
  public var grade: Grade
  /// How long its test process ran (`nil` when it was not run: it did not compile).
  public var seconds: Double?
  /// True when the runner's process time limit stopped it, rather than a test's deadline.
  public var timedOut: Bool

  public init(grade: Grade, seconds: Double? = nil, timedOut: Bool = false) {
    self.grade = grade
    self.seconds = seconds
    self.timedOut = timedOut
  }
}

/// `workbook mistakes` (and the last section of `workbook verify`): each exercise's
/// mistakes must get their verdict with their phrase, its alternatives must pass.
///
/// The variants are applied to a copy of the package (``VariantTree``), in rounds per
/// chapter: at most one variant per exercise in a round, one build of the chapter, the
/// round's exercises graded each in its own process (`jobs` at once, across rounds), then
/// the solutions restored. A mistake expected not to compile gets a round of its own.
///
/// With `jobs` above 1 there are two trees, used by turns: a round builds in one while the
/// last round's suites run in the other, and its processes start as the last round's end.
/// A build beside running suites runs at the lowest CPU priority, so that they get the
/// processors whenever they need them. A tree is rebuilt only once its round's suites have
/// ended.
///
/// When a round's build fails, its variants are graded one by one. A variant whose result
/// does not match, in a round of several (exercises of a chapter can use each other's
/// code) or while another build or round ran beside it, is run again alone, with nothing
/// else running, and that result is the one reported.
public struct MistakeChecker: Sendable {
  public var root: URL
  public var timeout: Double
  public var jobs: Int
  public var status: StatusLine
  /// How many times each variant's suite runs on one build; all must be as expected (for
  /// mistakes that the tests catch by racing threads).
  public var repeats: Int
  /// Only the variants whose name contains this (case-insensitive), when set.
  public var only: String?
  /// The notes a passing variant can earn: a noted alternative must earn its own, and no
  /// other alternative a caution note.
  public var noteRules: [NoteRule]

  public init(
    root: URL, timeout: Double, jobs: Int, status: StatusLine, repeats: Int = 1,
    only: String? = nil, noteRules: [NoteRule] = []
  ) {
    self.root = root
    self.timeout = timeout
    self.jobs = max(1, jobs)
    self.status = status
    self.repeats = max(1, repeats)
    self.only = only
    self.noteRules = noteRules
  }

  /// The variants of `exercise` this run checks.
  func variants(of exercise: Exercise) -> [Variant] {
    Variant.all(of: exercise).filter { variant in
      only.map { variant.name.localizedLowercase.contains($0.localizedLowercase) } ?? true
    }
  }

  /// A variant ready to run: the solution file's path and its replacement.
  struct Prepared: Sendable {
    var variant: Variant
    var exercise: Exercise
    var path: String
    var content: Data
    /// True when it changes only bodies (see ``DeclarationOutline``): once the rounds that
    /// change declarations are done, a round of these builds in about a second.
    var keepsDeclarations = false
  }

  /// Checks the variants of `selection`, calling `report` with each chapter's checks (in
  /// workbook order) once the chapter is done. Returns the counts.
  @discardableResult
  public func run(
    _ selection: [(chapter: Chapter, exercises: [Exercise])], report: (CheckResult) -> Void
  ) throws(WorkbookError) -> (passed: Int, failed: Int) {
    var passed = 0
    var failed = 0
    let withVariants = selection.filter { entry in
      entry.exercises.contains { !variants(of: $0).isEmpty }
    }
    guard !withVariants.isEmpty else { return (0, 0) }
    let trees =
      [VariantTree(root: root)]
      + (jobs > 1 ? [VariantTree(root: root, folder: VariantTree.secondFolder)] : [])
    status.show("mistakes: copying the package into \(VariantTree.folder)…")
    for tree in trees { try tree.sync() }
    let cleanup = InterruptCleanup.add {
      for tree in trees { tree.restore(closing: true) }
    }
    defer {
      for tree in trees { tree.restore() }
      InterruptCleanup.remove(cleanup)
      status.clear()
    }
    for (chapter, exercises) in withVariants {
      let results = try check(chapter, exercises, trees: trees)
      status.clear()
      for result in results {
        if result.passed { passed += 1 } else { failed += 1 }
        report(result)
      }
    }
    return (passed, failed)
  }

  /// One chapter's variants, in rounds; the checks in workbook order.
  func check(
    _ chapter: Chapter, _ exercises: [Exercise], trees: [VariantTree]
  ) throws(WorkbookError) -> [CheckResult] {
    var results: [String: CheckResult] = [:]
    var queues: [[Prepared]] = []
    var ownRounds: [[Prepared]] = []
    for exercise in exercises {
      var queue: [Prepared] = []
      for variant in variants(of: exercise) {
        switch prepare(variant, exercise, in: chapter) {
        case .success(let prepared):
          if variant.expected == .doesNotCompile {
            ownRounds.append([prepared])
          } else {
            queue.append(prepared)
          }
        case .failure(let problem):
          results[variant.label] = CheckResult(
            "\(variant.label): \(problem.headline)", problem.lines)
        }
      }
      // Declarations changed first: the rounds after them build without compiling the tests.
      let solution =
        (try? String(
          contentsOf: root.appendingPathComponent(chapter.solutionPath(exercise)), encoding: .utf8))
        .map(DeclarationOutline.init)
      for index in queue.indices {
        queue[index].keepsDeclarations =
          DeclarationOutline(String(decoding: queue[index].content, as: UTF8.self)) == solution
      }
      queues.append(
        queue.filter { !$0.keepsDeclarations } + queue.filter { $0.keepsDeclarations })
    }
    let rounds = Self.rounds(exercises, queues) + ownRounds

    /// The variants to run again alone, with what they were graded first (`nil`: their
    /// round's build failed).
    var again: [(prepared: Prepared, first: CheckResult?)] = []
    /// A round's results, or its variants queued to run again alone: all of them when its
    /// build failed (`nil`), a mismatch when it may owe to what ran beside it.
    func settle(_ round: [Prepared], _ outcomes: [String: [VariantOutcome]]?, shared: Bool) {
      for prepared in round {
        guard let runs = outcomes?[prepared.variant.label] else {
          again.append((prepared, nil))
          continue
        }
        let result = Self.judge(prepared.variant, runs, timeout: timeout)
        if !result.passed, shared || round.count > 1 {
          again.append((prepared, result))
        } else {
          results[prepared.variant.label] = result
        }
      }
    }
    func settle(_ grading: RoundGrading) throws(WorkbookError) {
      let outcomes = try grading.finish()
      settle(grading.round, outcomes, shared: grading.overlapped)
    }

    let slots = DispatchSemaphore(value: jobs)
    var running: [RoundGrading?] = Array(repeating: nil, count: trees.count)
    do throws(WorkbookError) {
      for (index, round) in rounds.enumerated() {
        let turn = index % trees.count
        // The tree's last round must end before the tree changes; the other tree's goes on.
        if let earlier = running[turn] {
          running[turn] = nil
          try settle(earlier)
        }
        let others = running.compactMap { $0 }
        let title = "chapter \(chapter.number), round \(index + 1) of \(rounds.count)"
        let beside = others.isEmpty ? "" : " (round \(index) is grading)"
        for other in others { other.markOverlapped() }
        switch try buildRound(round, chapter, tree: trees[turn], title: title, beside: beside) {
        case .graded(let outcomes):
          settle(round, outcomes, shared: false)
        case .built(let product, let grader, let request):
          let grading = RoundGrading(round: round, tree: trees[turn], overlapped: !others.isEmpty)
          grading.start(
            chapter, product: product, grader: grader, request: request, repeats: repeats,
            slots: slots)
          running[turn] = grading
        }
      }
      for case let grading? in running {
        try settle(grading)
      }
    } catch {
      // No process outlives the run: wait for the suites still running (an interrupt has
      // stopped them already).
      for case let grading? in running { _ = try? grading.finish() }
      throw error
    }

    // Declarations changed first here too: the builds after them take about a second.
    let alone =
      again.filter { !$0.prepared.keepsDeclarations }
      + again.filter { $0.prepared.keepsDeclarations }
    for (index, (prepared, first)) in alone.enumerated() {
      let label = prepared.variant.label
      let title = "chapter \(chapter.number), alone \(index + 1) of \(alone.count): \(label)"
      let runs =
        try runRound([prepared], chapter, tree: trees[0], title: title, slots: slots)?[label]
        ?? [VariantOutcome(grade: Grade(.failed, ["not graded"]))]
      var result = Self.judge(prepared.variant, runs, timeout: timeout)
      // Said, so that a verdict that depends on the machine's load shows in the log.
      if result.passed, let first {
        result.name += " (alone; beside other work: \(first.name.dropFirst(label.count + 2)))"
      }
      results[label] = result
    }
    return exercises.flatMap(variants(of:)).compactMap { results[$0.label] }
  }

  /// The rounds for `queues` (each exercise's variants, in order): each round takes the next
  /// variant of as many exercises as it can, those with the most left first, but never two
  /// exercises of which one uses the other (`uses`): a mistake in the used one would change
  /// the other's verdict.
  static func rounds(_ exercises: [Exercise], _ queues: [[Prepared]]) -> [[Prepared]] {
    var pending = queues
    var rounds: [[Prepared]] = []
    func related(_ one: Exercise, _ other: Exercise) -> Bool {
      one.uses.contains(other.id) || other.uses.contains(one.id)
    }
    while pending.contains(where: { !$0.isEmpty }) {
      var round: [Prepared] = []
      var taken: [Exercise] = []
      let order = pending.indices.filter { !pending[$0].isEmpty }
        .sorted { (pending[$0].count, $1) > (pending[$1].count, $0) }
      for index in order where !taken.contains(where: { related($0, exercises[index]) }) {
        round.append(pending[index].removeFirst())
        taken.append(exercises[index])
      }
      rounds.append(round)
    }
    return rounds
  }

  struct Problem: Error {
    var headline: String
    var lines: [String]
  }

  /// The variant's replacement for the solution file: the `.swift` file, or the solution
  /// with the `.patch` applied.
  func prepare(
    _ variant: Variant, _ exercise: Exercise, in chapter: Chapter
  ) -> Result<Prepared, Problem> {
    let path = chapter.solutionPath(exercise)
    guard let source = try? Data(contentsOf: root.appendingPathComponent(variant.source)) else {
      return .failure(Problem(headline: "cannot read \(variant.source)", lines: ["(missing?)"]))
    }
    var content = source
    if variant.source.hasSuffix(".patch") {
      guard
        let solution = try? String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
      else {
        return .failure(
          Problem(headline: "cannot read the solution \(path)", lines: ["(missing?)"]))
      }
      do {
        let diff = try UnifiedDiff.parse(
          String(decoding: source, as: UTF8.self), name: variant.source)
        content = Data(try diff.apply(to: solution, name: variant.source).utf8)
      } catch {
        return .failure(Problem(headline: "the patch does not apply", lines: [error.message]))
      }
    }
    return .success(Prepared(variant: variant, exercise: exercise, path: path, content: content))
  }

  /// What building a round gave: a product whose suites are to run, or the round's
  /// outcomes already (the build failed: `nil`, or its one variant's "does not compile").
  enum BuiltRound {
    case built(product: URL, grader: Grader, request: BuildRequest)
    case graded([String: [VariantOutcome]]?)
  }

  /// Applies the round's variants to `tree` and builds the chapter once. When the build
  /// failed, the tree is restored.
  func buildRound(
    _ round: [Prepared], _ chapter: Chapter, tree: VariantTree, title: String,
    beside: String = ""
  ) throws(WorkbookError) -> BuiltRound {
    var built = false
    defer { if !built { tree.restore() } }
    for prepared in round { try tree.write(prepared.path, prepared.content) }
    let status = self.status
    var options = GraderOptions(
      root: tree.tree, source: .solutions, scratchPath: tree.scratchPath, timeout: timeout,
      jobs: jobs, longTests: true)
    options.noteRules = noteRules
    let grader = Grader(options: options, status: StatusLine(enabled: false))
    status.show("mistakes: \(title): building…\(beside)")
    var request = grader.request(chapter: chapter.number)
    request.lowPriority = !beside.isEmpty
    let build = try BuildStep.run(request) { step in
      status.show("mistakes: \(title): building… [\(step)]\(beside)")
    }
    if ChildProcess.interrupted { throw .interrupted }
    guard build.succeeded, let product = build.testProduct else {
      guard round.count == 1, let only = round.first else { return .graded(nil) }
      let report = CompileFailure.readOnce(
        chapter: chapter, exercises: [only.exercise], build: build, root: tree.tree,
        source: .solutions)
      let details = (report.exercises.first?.details ?? []) + report.notes
      return .graded([only.variant.label: [VariantOutcome(grade: Grade(.doesNotCompile, details))]])
    }
    status.show("mistakes: \(title): grading \(round.count)…")
    built = true
    return .built(product: product, grader: grader, request: request)
  }

  /// Builds the round and grades it, with nothing else running: a variant run again alone.
  /// `nil` when the build failed and the round has more than one variant.
  func runRound(
    _ round: [Prepared], _ chapter: Chapter, tree: VariantTree, title: String,
    slots: DispatchSemaphore
  ) throws(WorkbookError) -> [String: [VariantOutcome]]? {
    switch try buildRound(round, chapter, tree: tree, title: title) {
    case .graded(let outcomes):
      return outcomes
    case .built(let product, let grader, let request):
      let grading = RoundGrading(round: round, tree: tree, overlapped: false)
      grading.start(
        chapter, product: product, grader: grader, request: request, repeats: repeats,
        slots: slots)
      return try grading.finish()
    }
  }

  /// Whether every one of `runs` is what `variant` expects: the first that is not, with
  /// how many of the runs were not, or the last run's line with the count of runs.
  static func judge(
    _ variant: Variant, _ runs: [VariantOutcome], timeout: Double
  ) -> CheckResult {
    let results = runs.map { judge(variant, $0, timeout: timeout) }
    guard results.count > 1 else {
      return results.first ?? CheckResult("\(variant.label): not graded", ["(no runs)"])
    }
    let failing = results.filter { !$0.passed }
    guard let first = failing.first else {
      return CheckResult(
        "\(results[results.count - 1].name), \(results.count) of \(results.count) runs")
    }
    return CheckResult(
      "\(first.name); \(failing.count) of \(results.count) runs were not as expected",
      first.problems)
  }

  /// Whether `outcome` is what `variant` expects, as the line `workbook mistakes` prints
  /// and the details under it when it is not.
  public static func judge(
    _ variant: Variant, _ outcome: VariantOutcome, timeout: Double
  ) -> CheckResult {
    let grade = outcome.grade
    let time = outcome.seconds.map { String(format: " (%.1f s)", $0) } ?? ""
    var details = grade.details
    if details.isEmpty {
      details = [
        grade.verdict == .passed && variant.kind == .mistake
          ? "every test passed: the tests do not catch this mistake" : "(no details)"
      ]
    }
    let label = variant.label
    guard grade.verdict == variant.expected else {
      return CheckResult(
        "\(label): graded \(grade.verdict.rawValue), expected \(variant.expected.rawValue)\(time)",
        details)
    }
    if variant.kind == .mistake, outcome.timedOut {
      return CheckResult(
        "\(label): graded by the \(Classifier.formatSeconds(timeout)) process limit, not by a "
          + "test deadline\(time)",
        [
          "a hang must be caught by a test's deadline (withDeadline) within seconds, so the "
            + "learner sees its cause"
        ] + details)
    }
    if let phrase = variant.phrase,
      !grade.details.joined(separator: "\n").localizedLowercase.contains(
        phrase.localizedLowercase)
    {
      return CheckResult(
        "\(label): \(grade.verdict.rawValue), but lacks the phrase \"\(phrase)\"\(time)", details)
    }
    if variant.kind == .alternative {
      let earned = grade.notes.map(\.id)
      let missing = variant.notes.filter { !earned.contains($0) }
      if !missing.isEmpty {
        return CheckResult(
          "\(label): passed, but without the note\(missing.count == 1 ? "" : "s") "
            + missing.map { "\"\($0)\"" }.joined(separator: ", ") + time,
          earned.isEmpty ? ["(no note)"] : grade.notes.map(\.rendered))
      }
      let unexpected = grade.notes.filter { $0.type.isCaution && !variant.notes.contains($0.id) }
      if !unexpected.isEmpty {
        return CheckResult(
          "\(label): passed, with a note it should not earn\(time)",
          unexpected.map(\.rendered))
      }
      if !variant.notes.isEmpty {
        return CheckResult(
          "\(label): passed with the note\(variant.notes.count == 1 ? "" : "s") "
            + variant.notes.map { "\"\($0)\"" }.joined(separator: ", ") + time)
      }
    }
    return CheckResult("\(label): \(grade.verdict.rawValue)\(time)")
  }
}

/// Work to undo when Ctrl-C or SIGTERM stops the runner (the interrupt handler runs it
/// after stopping the children, before it exits).
public enum InterruptCleanup {
  private static let actions = Mutex<[Int: @Sendable () -> Void]>([:])
  private static let counter = Mutex(0)

  public static func add(_ action: @escaping @Sendable () -> Void) -> Int {
    let id = counter.withLock { count in
      count += 1
      return count
    }
    actions.withLock { $0[id] = action }
    return id
  }

  public static func remove(_ id: Int) {
    _ = actions.withLock { $0.removeValue(forKey: id) }
  }

  /// Runs (and forgets) every registered action.
  public static func runAll() {
    let pending = actions.withLock { actions in
      defer { actions = [:] }
      return actions
    }
    for (_, action) in pending.sorted(by: { $0.key < $1.key }) { action() }
  }
}
