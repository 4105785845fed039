import Dispatch
import Foundation
import Synchronization

/// Grades a batch of mutants of one chapter, at most one per exercise, in the scratch copy:
/// the mutants are written into the copy's `Solutions/`, the chapter is built once, and
/// each mutant's exercise is graded in its own process (`jobs` at once), exactly as
/// `workbook mistakes` grades a variant (``MistakeChecker``): `WORKBOOK_SOURCE=solutions`,
/// the long form of the tests, the usual time limit.
///
/// A batch whose build fails sets aside the mutants whose exercise's files hold an error
/// and builds the rest again; an error elsewhere sends every mutant to a build of its own.
/// A mutant alone whose build fails did not compile. A kill in a batch counts only when
/// no other mutant of the batch is in code the exercise uses (``MutationDependencies``);
/// otherwise the mutant is graded again alone.
struct MutationRound: Sendable {
  /// A mutant ready to grade.
  struct Entry: Sendable {
    var mutant: Mutant
    var exercise: Exercise
    /// The solution file, relative to the root, and its mutated content.
    var path: String
    var content: Data
    var key: String { "\(exercise.id) \(mutant.id)" }
  }

  var chapter: Chapter
  var tree: VariantTree
  var timeout: Double
  var jobs: Int
  var dependencies: MutationDependencies
  var progress: MutationProgress

  var grader: Grader {
    Grader(
      options: GraderOptions(
        root: tree.tree, source: .solutions, scratchPath: tree.scratchPath, timeout: timeout,
        jobs: jobs, longTests: true))
  }

  /// Each entry's outcome, by ``Entry/key``. The copy's solutions are as committed after.
  func run(_ batch: [Entry], title: String) throws(WorkbookError) -> [String: MutationOutcome] {
    defer { tree.restore() }
    var results: [String: MutationOutcome] = [:]
    var alone: [Entry] = []
    var active = batch
    while !active.isEmpty {
      let build = try self.build(active, title: title)
      if build.succeeded, let product = build.testProduct {
        let grades = try grade(active.map { ($0.key, $0.exercise) }, product: product, title: title)
        for entry in active {
          let outcome = Self.outcome(grades[entry.key])
          let others = active.filter { $0.exercise.id != entry.exercise.id }
          if case .killed = outcome,
            others.contains(where: { dependencies.does(entry.exercise.id, use: $0.exercise.id) })
          {
            alone.append(entry)
          } else {
            results[entry.key] = outcome
          }
        }
        break
      }
      if active.count == 1, let only = active.first {
        results[only.key] = .notCompiled
        break
      }
      var plan = PartialBuild(chapter: chapter, source: .solutions, root: tree.tree)
      _ = plan.leaveOut(after: build)
      let broken = Set(plan.leftOut.map(\.id))
      let owners = active.filter { broken.contains($0.exercise.id) }
      if owners.isEmpty {
        alone += active
        break
      }
      alone += owners
      active.removeAll { broken.contains($0.exercise.id) }
    }
    for (index, entry) in alone.enumerated() {
      let each = "\(title), alone \(index + 1) of \(alone.count)"
      results.merge(try run([entry], title: each)) { _, new in new }
    }
    return results
  }

  /// The unmutated chapter's grades for `exercises`, by id; `nil` when it does not build.
  func baseline(_ exercises: [Exercise]) throws(WorkbookError) -> [String: Grade]? {
    defer { tree.restore() }
    let build = try self.build([], title: "chapter \(chapter.number), the solutions as written")
    guard build.succeeded, let product = build.testProduct else { return nil }
    return try grade(
      exercises.map { ($0.id, $0) }, product: product,
      title: "chapter \(chapter.number), the solutions as written")
  }

  static func outcome(_ grade: Grade?) -> MutationOutcome {
    switch grade?.verdict {
    case .passed: .survived
    case .doesNotCompile: .notCompiled
    case let verdict?: .killed(verdict)
    case nil: .killed(.failed)
    }
  }

  /// Puts the entries' mutants (and only them) into the copy and builds the chapter.
  func build(_ entries: [Entry], title: String) throws(WorkbookError) -> BuildResult {
    tree.restore()
    for entry in entries { try tree.write(entry.path, entry.content) }
    progress.phase("\(title): building…")
    let progress = self.progress
    let build = try BuildStep.run(grader.request(chapter: chapter.number)) { step in
      progress.phase("\(title): building… [\(step)]")
    }
    if ChildProcess.interrupted { throw .interrupted }
    return build
  }

  /// Runs each exercise's suite in its own process, `jobs` at once; the grades by key.
  func grade(
    _ runs: [(key: String, exercise: Exercise)], product: URL, title: String
  ) throws(WorkbookError) -> [String: Grade] {
    progress.phase("\(title): grading \(runs.count)…")
    let grader = self.grader
    let request = grader.request(chapter: chapter.number)
    let chapter = self.chapter
    let grades = Mutex<[String: Grade]>([:])
    let failures = Mutex<[WorkbookError]>([])
    let slots = DispatchSemaphore(value: max(1, jobs))
    let group = DispatchGroup()
    for run in runs {
      slots.wait()
      group.enter()
      DispatchQueue.global().async {
        defer {
          slots.signal()
          group.leave()
        }
        do throws(WorkbookError) {
          let graded = try grader.gradeOne(
            chapter, run.exercise, product: product, request: request)
          grades.withLock { $0[run.key] = graded.grade }
        } catch {
          failures.withLock { $0.append(error) }
        }
      }
    }
    group.wait()
    if ChildProcess.interrupted { throw .interrupted }
    if let failure = failures.withLock({ $0.first }) { throw failure }
    return grades.withLock { $0 }
  }
}
