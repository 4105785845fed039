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
/// round's exercises graded each in its own process (`jobs` at once), then the solutions
/// restored. A mistake expected not to compile gets a round of its own. When a round's
/// build fails, its variants are graded one by one; a variant whose result in a round of
/// several does not match is run again alone, and that result is the one reported
/// (exercises of a chapter can use each other's code).
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
    let tree = VariantTree(root: root)
    status.show("mistakes: copying the package into \(VariantTree.folder)…")
    try tree.sync()
    let cleanup = InterruptCleanup.add { tree.restore(closing: true) }
    defer {
      tree.restore()
      InterruptCleanup.remove(cleanup)
      status.clear()
    }
    for (chapter, exercises) in withVariants {
      let results = try check(chapter, exercises, tree: tree)
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
    _ chapter: Chapter, _ exercises: [Exercise], tree: VariantTree
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
      queues.append(queue)
    }
    let longest = queues.map(\.count).max() ?? 0
    let rounds =
      (0..<longest).map { index in queues.compactMap { index < $0.count ? $0[index] : nil } }
      + ownRounds

    var again: [Prepared] = []
    for (index, round) in rounds.enumerated() where !round.isEmpty {
      let title = "chapter \(chapter.number), round \(index + 1) of \(rounds.count)"
      let outcomes = try runRound(round, chapter, tree: tree, title: title)
      for prepared in round {
        guard let runs = outcomes?[prepared.variant.label] else {
          again.append(prepared)  // the round's build failed: each alone
          continue
        }
        let result = Self.judge(prepared.variant, runs, timeout: timeout)
        if !result.passed, round.count > 1 {
          again.append(prepared)
        } else {
          results[prepared.variant.label] = result
        }
      }
    }
    for (index, prepared) in again.enumerated() {
      let title =
        "chapter \(chapter.number), alone \(index + 1) of \(again.count): \(prepared.variant.label)"
      let runs =
        try runRound([prepared], chapter, tree: tree, title: title)?[prepared.variant.label]
        ?? [VariantOutcome(grade: Grade(.failed, ["not graded"]))]
      results[prepared.variant.label] = Self.judge(prepared.variant, runs, timeout: timeout)
    }
    return exercises.flatMap(variants(of:)).compactMap { results[$0.label] }
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

  /// Applies the round's variants, builds the chapter once, grades each variant's exercise
  /// in its own process, and restores the solutions. `nil` when the build failed and the
  /// round has more than one variant (they are then run one by one).
  func runRound(
    _ round: [Prepared], _ chapter: Chapter, tree: VariantTree, title: String
  ) throws(WorkbookError) -> [String: [VariantOutcome]]? {
    defer { tree.restore() }
    for prepared in round { try tree.write(prepared.path, prepared.content) }
    let status = self.status
    var options = GraderOptions(
      root: tree.tree, source: .solutions, scratchPath: tree.scratchPath, timeout: timeout,
      jobs: jobs, longTests: true)
    options.noteRules = noteRules
    let grader = Grader(options: options, status: StatusLine(enabled: false))
    status.show("mistakes: \(title): building…")
    let build = try BuildStep.run(grader.request(chapter: chapter.number)) { step in
      status.show("mistakes: \(title): building… [\(step)]")
    }
    if ChildProcess.interrupted { throw .interrupted }
    guard build.succeeded, let product = build.testProduct else {
      guard round.count == 1, let only = round.first else { return nil }
      let report = CompileFailure.readOnce(
        chapter: chapter, exercises: [only.exercise], build: build, root: tree.tree,
        source: .solutions)
      let details = (report.exercises.first?.details ?? []) + report.notes
      return [only.variant.label: [VariantOutcome(grade: Grade(.doesNotCompile, details))]]
    }
    status.show("mistakes: \(title): grading \(round.count)…")
    let request = grader.request(chapter: chapter.number)
    let outcomes = Mutex<[String: [VariantOutcome]]>([:])
    let failures = Mutex<[WorkbookError]>([])
    let slots = DispatchSemaphore(value: jobs)
    let group = DispatchGroup()
    let repeated = round.flatMap { prepared in Array(repeating: prepared, count: repeats) }
    for prepared in repeated {
      slots.wait()
      group.enter()
      DispatchQueue.global().async {
        defer {
          slots.signal()
          group.leave()
        }
        do throws(WorkbookError) {
          let graded = try grader.gradeOne(
            chapter, prepared.exercise, product: product, request: request)
          outcomes.withLock {
            $0[prepared.variant.label, default: []].append(
              VariantOutcome(
                grade: graded.grade, seconds: graded.seconds, timedOut: graded.timedOut))
          }
        } catch {
          failures.withLock { $0.append(error) }
        }
      }
    }
    group.wait()
    if ChildProcess.interrupted { throw .interrupted }
    if let failure = failures.withLock({ $0.first }) { throw failure }
    return outcomes.withLock { $0 }
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
