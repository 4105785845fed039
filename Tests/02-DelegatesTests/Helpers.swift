import Foundation
import LegacyKit
import Testing
import WorkbookTesting

/// Holds a simulated framework's callbacks until the test opens it, so that a test can make
/// two calls overlap for certain, however busy the machine is: nothing is reported until
/// both calls have started.
///
/// Once open, the held callbacks and every later one run in order, one at a time, on a
/// serial background queue (as a framework's own queue would run them).
final class CallbackGate: @unchecked Sendable {
  private let lock = NSLock()
  private let queue = DispatchQueue(label: "DelegatesTests.CallbackGate")
  private var held: [@Sendable () -> Void] = []
  private var isOpen = false

  /// A script that delivers through this gate, once per report.
  var script: CallbackScript {
    CallbackScript(
      timing: .scheduled(
        CallbackScheduler(name: "a gate the test opens") { [self] work in hold(work) }))
  }

  /// How many callbacks are waiting for the gate to open.
  var heldCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return held.count
  }

  /// Lets every held callback run, in the order they came, and every later one after them.
  func open() {
    lock.lock()
    defer { lock.unlock() }
    isOpen = true
    for work in held { queue.async(execute: work) }
    held = []
  }

  private func hold(_ work: @escaping @Sendable () -> Void) {
    lock.lock()
    defer { lock.unlock() }
    if isOpen {
      queue.async(execute: work)
    } else {
      held.append(work)
    }
  }
}

/// A task executor that notes where each task that prefers it was resumed: inside a
/// framework's report (a callback delivered through ``reportScript``), or elsewhere, later.
///
/// A delegate that hands its report to a task or a queue resumes the waiting caller only
/// after the report has returned, whenever that work gets to run: meanwhile the next call
/// may already have stored its continuation (and be answered by the old report), or join a
/// scan that has ended. Run the caller as `Task(executorPreference: watch) { … }`, let it
/// suspend, call ``startWatching(look:)``, then ``release()`` the reports.
///
/// Jobs run on Dispatch's global queue, any number at once, like the default executor.
final class ResumeWatch: TaskExecutor, @unchecked Sendable {
  private let lock = NSLock()
  private var reportThreads: [pthread_t] = []
  private var watching = false
  private var released = false
  private var inside = 0
  private var outside = 0
  private var seenAtResume: [String] = []
  private var look: (@Sendable () -> String)?
  private var held: [@Sendable () -> Void] = []

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    lock.lock()
    if watching {
      let here = pthread_self()
      if reportThreads.contains(where: { pthread_equal($0, here) != 0 }) {
        inside += 1
      } else {
        outside += 1
      }
      if let look { seenAtResume.append(look()) }
    }
    lock.unlock()
    let executor = asUnownedTaskExecutor()
    DispatchQueue.global().async { job.runSynchronously(on: executor) }
  }

  /// Reports held until ``release()``, then delivered one after another on a queue of
  /// their own, each noted as a report while it runs; a report made after the release is
  /// delivered at once, the same way.
  var reportScript: CallbackScript {
    CallbackScript(
      timing: .scheduled(
        CallbackScheduler(name: "a thread of its own, when the test lets it") { [self] work in
          lock.lock()
          let now = released
          if !now { held.append(work) }
          lock.unlock()
          if now { deliver([work]) }
        }))
  }

  /// How many reports wait for ``release()``.
  var heldCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return held.count
  }

  /// From now on, notes every resume; `look`, if given, is called at each resume, on the
  /// resuming thread, to note what the test sees at that moment.
  func startWatching(look: (@Sendable () -> String)? = nil) {
    lock.lock()
    watching = true
    self.look = look
    lock.unlock()
  }

  /// Delivers the held reports, in order, on the reports' own queue.
  func release() {
    lock.lock()
    let reports = held
    held = []
    released = true
    lock.unlock()
    deliver(reports)
  }

  /// Delivers the oldest held report on a thread of its own, whatever other reports are
  /// doing meanwhile (a report at the same moment as another); false when none is held.
  @discardableResult
  func releaseOne() -> Bool {
    lock.lock()
    let report = held.isEmpty ? nil : held.removeFirst()
    lock.unlock()
    guard let report else { return false }
    Thread.detachNewThread { [self] in runAsReport(report) }
    return true
  }

  /// Reports run one at a time, in the order they were made, as on a framework's own queue.
  private let reportQueue = DispatchQueue(label: "DelegatesTests.ResumeWatch")

  private func deliver(_ reports: [@Sendable () -> Void]) {
    for report in reports {
      reportQueue.async { [self] in runAsReport(report) }
    }
  }

  /// Runs `report` on this thread, noted as a report while it runs.
  private func runAsReport(_ report: () -> Void) {
    let here = pthread_self()
    lock.lock()
    reportThreads.append(here)
    lock.unlock()
    report()
    lock.lock()
    reportThreads.removeAll { pthread_equal($0, here) != 0 }
    lock.unlock()
  }

  /// Resumes noted inside a report, and after one (or on another thread).
  var resumes: (inside: Int, outside: Int) {
    lock.lock()
    defer { lock.unlock() }
    return (inside, outside)
  }

  /// What `look` saw at each resume.
  var seen: [String] {
    lock.lock()
    defer { lock.unlock() }
    return seenAtResume
  }
}

/// Runs `callers` calls of `call` at once, as tasks that prefer `watch`, lets the framework's
/// `reports` held reports go once every call has started, and returns the calls' results
/// (each within the deadline) in the order they were started, with where they were resumed.
func resumedInsideTheReport<T: Sendable>(
  _ operationName: String, hint: String, likelyCause: (@Sendable () -> String)? = nil,
  watch: ResumeWatch, callers: Int = 1, reports: Int = 1,
  look: (@Sendable () -> String)? = nil,
  sourceLocation: SourceLocation = #_sourceLocation,
  _ call: @escaping @Sendable () async throws -> T
) async throws -> (results: [Result<T, any Error>], inside: Int, outside: Int) {
  var tasks: [Task<T, any Error>] = []
  for _ in 0..<callers {
    tasks.append(Task(executorPreference: watch) { try await call() })
    // One at a time, so that they wait in a known order.
    _ = await eventually { watch.heldCount >= min(tasks.count, reports) }
  }
  try #require(
    await eventually { watch.heldCount == reports },
    "\(operationName) did not start what it waits for", sourceLocation: sourceLocation)
  // Let the callers that start no report of their own join (one that comes later still
  // gets a report: those made after the release are delivered at once).
  for _ in 0..<20 { await Task.yield() }
  watch.startWatching(look: look)
  watch.release()
  var results: [Result<T, any Error>] = []
  for task in tasks {
    let result = try await withDeadline(
      .seconds(2), operationName, likelyCause: likelyCause ?? { hint },
      sourceLocation: sourceLocation
    ) {
      await Result(catching: { try await task.value })
    }
    results.append(result)
  }
  let resumes = watch.resumes
  return (results, resumes.inside, resumes.outside)
}

/// What went wrong when a caller was resumed after the framework's report had returned.
func resumedAfterTheReport(_ operationName: String, outside: Int) -> Comment {
  """
  \(operationName) was resumed \(outside) time(s) only after the framework's report had \
  returned, by work left to run later (a Task or a queue): until that work runs, the \
  report's caller is still stored, so a new call can be answered by this old report, or \
  join what has already ended. Each report must be handled while it is being made
  """
}

/// What a one-shot call left on the framework object when its caller went on.
struct DelegateAtResume<Value: Sendable>: Sendable {
  /// What the call returned.
  var value: Value
  /// "none", or "a TYPE": the framework's delegate, read as the call returned.
  var delegate: String
  /// False when the caller was never resumed through the probe.
  var resumed: Bool
}

/// Runs `call` on a ``ResumeProbeExecutor`` whose framework reports through `gate`, and reads
/// `delegate()` the moment the call returns. The first report that resumes the call's task
/// is held in its `resume` until then (for at most a second), so whatever the reporting
/// thread would do after resuming (let go of the delegate, say) comes too late, every run.
/// A one-shot call must have let go by the time its caller goes on, however it waits.
func delegateAtResume<Value: Sendable>(
  of call: @escaping @Sendable () async throws -> Value, gate: CallbackGate,
  delegate: @escaping @Sendable () -> AnyObject?, started: Comment, name: String, hint: String,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> DelegateAtResume<Value> {
  let probe = ResumeProbeExecutor()
  let seen = Locked<String?>(nil)
  let task = Task(executorPreference: probe) {
    let value = try await call()
    let current = delegate()
    seen.withLock { $0 = current.map { "a \(type(of: $0))" } ?? "none" }
    return value
  }
  try #require(await eventually { gate.heldCount == 1 }, started, sourceLocation: sourceLocation)
  for _ in 0..<20 { await Task.yield() }
  probe.holdNextResumer { seen.value != nil }
  gate.open()
  let value = try await withDeadline(
    .seconds(3), name, hint: hint, sourceLocation: sourceLocation
  ) {
    try await task.value
  }
  return DelegateAtResume(
    value: value, delegate: seen.value ?? "none", resumed: probe.probesFired == 1)
}

/// A picker of this chapter (image or contact), as far as the tests judge a pick that is
/// never answered.
protocol PresentedPicker: Sendable {
  /// How many answers found no delegate to tell.
  var reportsWithNoDelegate: Int { get }
  /// How many times the picker has been presented.
  var presentationCount: Int { get }
}

extension ImagePickerController: PresentedPicker {}
extension ContactPickerViewController: PresentedPicker {}

/// The likely cause when a pick is never answered, judged at the deadline from what the
/// picker saw: an answer that found no delegate, or a pick that never showed the picker;
/// otherwise `hint`. `presented` is the picker's presentation count before the pick.
func pickCause(
  _ controller: some PresentedPicker, presented: Int, _ hint: String
) -> @Sendable () -> String {
  {
    if controller.reportsWithNoDelegate > 0 {
      return "the picker reported the user's answer while it had no delegate, so nobody "
        + "heard it: the delegate had been freed (the picker holds it weakly, so something "
        + "must keep it alive while a pick waits) or set to nil after an earlier pick (set "
        + "it once, and leave it)"
    }
    if controller.presentationCount == presented {
      return "this pick never showed the picker (present() was not called), so nothing will "
        + "ever answer it: was it refused, or the picker skipped, because another pick still "
        + "waited or a sheet was still on screen? A user who walked away leaves that sheet "
        + "there, and it never reports: a new pick takes over, presents again, and the old "
        + "caller gets nil"
    }
    return hint
  }
}
