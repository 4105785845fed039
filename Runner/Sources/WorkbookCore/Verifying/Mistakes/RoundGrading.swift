import Dispatch
import Foundation
import Synchronization

/// One round of ``MistakeChecker``, built and being graded: its exercises' suites run in the
/// background, each in its own process, while the checker builds the next round in its
/// other tree. ``finish()`` waits for them and restores the round's tree.
final class RoundGrading: Sendable {
  let round: [MistakeChecker.Prepared]
  let tree: VariantTree
  private let group = DispatchGroup()
  private let outcomes = Mutex<[String: [VariantOutcome]]>([:])
  private let failures = Mutex<[WorkbookError]>([])
  private let overlap: Mutex<Bool>

  init(round: [MistakeChecker.Prepared], tree: VariantTree, overlapped: Bool) {
    self.round = round
    self.tree = tree
    overlap = Mutex(overlapped)
  }

  /// True when a build or another round's suites ran while this round's did: a mismatch
  /// may then owe to the load, and is graded again alone.
  var overlapped: Bool { overlap.withLock { $0 } }

  func markOverlapped() { overlap.withLock { $0 = true } }

  /// Starts the suites: each variant's exercise `repeats` times, as `slots` (shared by every
  /// round) allow. Returns at once.
  func start(
    _ chapter: Chapter, product: URL, grader: Grader, request: BuildRequest, repeats: Int,
    slots: DispatchSemaphore
  ) {
    let runs = round.flatMap { Array(repeating: $0, count: repeats) }
    group.enter()
    // One thread hands out the runs as slots free up, so the caller can go on building.
    Thread.detachNewThread { [self] in
      defer { group.leave() }
      for prepared in runs {
        slots.wait()
        if ChildProcess.interrupted {
          slots.signal()
          return
        }
        group.enter()
        DispatchQueue.global().async { [self] in
          defer {
            slots.signal()
            group.leave()
          }
          do throws(WorkbookError) {
            // A mistake runs the suite's short form first, the one a learner's check runs:
            // caught there, it is caught. Only when it is not as expected does the long form
            // run, whose stress tests catch a rare race every time. An alternative runs the
            // long form only: passing the short form proves less.
            let mistake = prepared.variant.kind == .mistake
            var graded = try grader.gradeOne(
              chapter, prepared.exercise, product: product, request: request,
              shortForm: mistake)
            if mistake,
              !MistakeChecker.judge(
                prepared.variant,
                VariantOutcome(
                  grade: graded.grade, seconds: graded.seconds, timedOut: graded.timedOut),
                timeout: grader.options.timeout
              ).passed
            {
              graded = try grader.gradeOne(
                chapter, prepared.exercise, product: product, request: request)
            }
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
    }
  }

  /// Waits for every run, restores the tree, and returns the outcomes by variant label.
  func finish() throws(WorkbookError) -> [String: [VariantOutcome]] {
    group.wait()
    tree.restore()
    if ChildProcess.interrupted { throw .interrupted }
    if let failure = failures.withLock({ $0.first }) { throw failure }
    return outcomes.withLock { $0 }
  }
}
