import Dispatch
import Foundation

/// Something coroutines can be started on: it runs a task later, as its own work.
///
/// Legacy: `queue.startCoroutine { … }` starts a coroutine on a scheduler, and
/// `DispatchQueue` is the scheduler everyone used. The body runs as the scheduler's work
/// between suspensions; each `await()` inside it gives the scheduler back until the awaited
/// thing is ready.
///
/// In the workbook this becomes `Task { … }` (`Task { @MainActor in … }` for the main queue),
/// or an actor when the scheduler is a perform-style queue.
public protocol CoroutineScheduler {
  /// Runs `task` once, later, as this scheduler's work: for a queue, `async`.
  func scheduleTask(_ task: @escaping () -> Void)
}

extension DispatchQueue: CoroutineScheduler {
  public func scheduleTask(_ task: @escaping () -> Void) {
    // Legacy code hands non-Sendable closures to other threads; the coroutine's turns
    // (see CoroutineRunner) keep its body from running twice at once.
    let unchecked = Unchecked(task)
    async { unchecked.value() }
  }
}

/// Carries a value across threads without the compiler's checks, as legacy code did.
struct Unchecked<Value>: @unchecked Sendable {
  let value: Value
  init(_ value: Value) { self.value = value }
}

extension CoroutineScheduler {
  /// Starts a coroutine that runs `task` on this scheduler, and returns at once.
  ///
  /// Where the body runs: on a thread of its own (so `await()` can block it), but only
  /// while this scheduler runs one of its tasks for it. From its start to its first
  /// suspension, and from each resumption to the next suspension, the body holds one task
  /// of the scheduler. On a serial queue such as `DispatchQueue.main` the body therefore
  /// never overlaps the queue's other work, as if it ran there; while it is suspended the
  /// queue is free. It is not the queue's own thread, though: `Thread.isMainThread` is
  /// false in a coroutine started on the main queue, and Swift 6 main-actor checks fail
  /// there. A coroutine that blocks in any other way (a semaphore, `sleep`) holds its
  /// scheduler, just as it would have with the original libraries.
  ///
  /// An error thrown by `task` ends the coroutine and is dropped: use
  /// ``coroutineFuture(_:)`` to see it.
  ///
  /// In the workbook: `Task { … }`.
  public func startCoroutine(_ task: @escaping () throws -> Void) {
    CoroutineRunner.start(on: self) { try? task() }
  }

  /// Starts a coroutine that runs `task` on this scheduler (see ``startCoroutine(_:)``)
  /// and returns a future of its result.
  ///
  /// Cancelling the future does not stop the coroutine: the future fails with
  /// ``CoFutureError/cancelled`` at once, and the coroutine's result is ignored when it
  /// comes.
  ///
  /// In the workbook: `Task { … }` and its `value`, or `async let`.
  public func coroutineFuture<Value>(_ task: @escaping () throws -> Value) -> CoFuture<Value> {
    let promise = CoPromise<Value>()
    CoroutineRunner.start(on: self) { promise.complete(with: Result { try task() }) }
    return promise
  }
}

/// Questions about the running coroutine, and the blocking delay.
///
/// In the workbook: `Task.sleep(for:)`, and no need to ask whether code is in a coroutine,
/// since the compiler knows where `await` is allowed.
public enum Coroutine {
  /// True on a coroutine's thread, where `await()`, `awaitSend(_:)`, `awaitReceive()` and
  /// ``delay(_:)`` may be called. Elsewhere they stop the program.
  public static var isInsideCoroutine: Bool { CoroutineRunner.current != nil }

  /// Suspends the current coroutine for `duration`, giving its scheduler back meanwhile.
  ///
  /// Must be called inside a coroutine. In the workbook: `try await Task.sleep(for:)`,
  /// with an injected `Clock` so tests need not wait.
  public static func delay(_ duration: Duration) {
    let coroutine = CoroutineRunner.current(calling: "Coroutine.delay(_:)")
    let _: Void = coroutine.suspend { resume in
      DispatchQueue.global().asyncAfter(deadline: .now() + duration.timeInterval) { resume(()) }
    }
  }
}

/// One coroutine: a dedicated thread that runs the body only while its scheduler lends it
/// a turn, and that blocks, without a turn, while it is suspended.
final class CoroutineRunner {
  private enum State {
    /// Resumed or new; a turn has been asked of the scheduler.
    case waitingForTurn
    /// The body runs, and a scheduler task waits for it to suspend or end.
    case running
    /// The body waits to be resumed; the scheduler is free.
    case suspended
    case finished
  }

  private static let threadKey = "CoroutineKit.CoroutineRunner"

  private let scheduler: CoroutineScheduler
  private let condition = NSCondition()
  private var state = State.waitingForTurn
  /// Counts the turns granted, so a turn's task never mistakes the next turn for its own.
  private var turn = 0

  private init(scheduler: CoroutineScheduler) {
    self.scheduler = scheduler
  }

  static func start(on scheduler: CoroutineScheduler, _ body: @escaping () -> Void) {
    let runner = CoroutineRunner(scheduler: scheduler)
    Thread { runner.run(body) }.start()
    scheduler.scheduleTask(runner.grantTurn)
  }

  /// The coroutine whose thread this is, if any.
  static var current: CoroutineRunner? {
    Thread.current.threadDictionary[threadKey] as? CoroutineRunner
  }

  /// The current coroutine; outside one, stops the program, as the original libraries did.
  static func current(calling api: String) -> CoroutineRunner {
    guard let runner = current else {
      preconditionFailure(
        "\(api) must be called inside a coroutine, because it blocks until the result is "
          + "ready; start one with DispatchQueue.global().startCoroutine { … }")
    }
    return runner
  }

  private func run(_ body: () -> Void) {
    // Named from inside: on Linux a name set before `start()` is not applied. Crash
    // reports show it (at most 15 characters).
    Thread.current.name = "coroutine"
    Thread.current.threadDictionary[CoroutineRunner.threadKey] = self
    condition.lock()
    while state != .running { condition.wait() }
    condition.unlock()

    body()

    Thread.current.threadDictionary.removeObject(forKey: CoroutineRunner.threadKey)
    condition.lock()
    state = .finished
    condition.broadcast()
    condition.unlock()
  }

  /// The scheduler's task: hands the body a turn and holds the scheduler until the body
  /// suspends or ends.
  private func grantTurn() {
    condition.lock()
    turn += 1
    let mine = turn
    state = .running
    condition.broadcast()
    while state == .running && turn == mine { condition.wait() }
    condition.unlock()
  }

  /// Blocks the coroutine until `register`'s `resume` is called, and returns its value.
  ///
  /// `register` runs at once, on the coroutine's thread; it hands `resume` to whatever
  /// will produce the value. `resume` may be called from any thread, even from inside
  /// `register` (then the coroutine keeps its turn and goes on at once); calls after the
  /// first are ignored.
  func suspend<Value>(_ register: (_ resume: @escaping (Value) -> Void) -> Void) -> Value {
    var value: Value?
    var resumed = false
    register { [self] newValue in
      condition.lock()
      guard !resumed else {
        condition.unlock()
        return
      }
      resumed = true
      value = newValue
      let wake = state == .suspended
      if wake { state = .waitingForTurn }
      condition.unlock()
      if wake { scheduler.scheduleTask(grantTurn) }
    }

    condition.lock()
    if !resumed {
      state = .suspended
      condition.broadcast()  // the scheduler is free while the coroutine waits
      while state != .running { condition.wait() }
    }
    let result = value!
    condition.unlock()
    return result
  }
}

extension Duration {
  /// This duration in seconds, for Dispatch.
  var timeInterval: TimeInterval {
    let (seconds, attoseconds) = components
    return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
  }
}
