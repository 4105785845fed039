import Foundation
import Synchronization
import Testing

/// Cancels a task at the worst moment for a check-then-act: right after one of its looks at
/// its own cancellation (`Task.isCancelled`, `Task.checkCancellation()`) found it not
/// cancelled, before the code that looked can act on the answer.
///
/// Code that checks for cancellation and then, in a separate step, stores a continuation for
/// its cancellation handler to find loses such a cancel: the handler runs in between, finds
/// nothing, and the continuation stored afterwards waits forever. The gap between the two
/// steps is a few nanoseconds, so no timing of a test lands in it; this probe does, every
/// time. Code that checks under the lock its handler takes is right: the cancel, made from
/// another thread, waits for that lock, and the handler then finds the continuation.
///
/// The probe sees a look because this module defines the two functions the compiler calls
/// for them (see `_workbookTaskIsCancelled`), so it sees every look in the test process;
/// outside a probed task they answer as the standard library does.
public final class CancelAfterCheck: Sendable {
  @TaskLocal static var current: CancelAfterCheck?

  private struct State {
    var looks = 0
    var fired = false
    var cancel: (@Sendable () -> Void)?
    var waitingForHandle: CheckedContinuation<Void, Never>?
  }

  private let number: Int
  private let state = Mutex(State())

  private init(number: Int) {
    self.number = number
  }

  /// Whether the cancel was made: false when the task looked fewer than `number` times.
  public var fired: Bool { state.withLock { $0.fired } }

  /// How many looks at its cancellation the task made while it was not cancelled.
  public var looks: Int { state.withLock { $0.looks } }

  /// Runs `operation` in a new task (on `executor`, if given), cancelled from another
  /// thread right after its `number`-th look at its cancellation that found none.
  public static func task<T: Sendable>(
    cancelledAfterLook number: Int,
    on executor: (any TaskExecutor)? = nil,
    _ operation: @escaping @Sendable () async throws -> T
  ) -> (task: Task<T, any Error>, probe: CancelAfterCheck) {
    let probe = CancelAfterCheck(number: number)
    let task = Task(executorPreference: executor) {
      // Nothing is counted before the probe can cancel this task.
      await probe.handleStored()
      return try await $current.withValue(probe) { try await operation() }
    }
    probe.store { task.cancel() }
    return (task, probe)
  }

  private func handleStored() async {
    await withCheckedContinuation { continuation in
      let ready = state.withLock { state in
        if state.cancel != nil { return true }
        state.waitingForHandle = continuation
        return false
      }
      if ready { continuation.resume() }
    }
  }

  private func store(cancel: @escaping @Sendable () -> Void) {
    let waiting = state.withLock { state in
      state.cancel = cancel
      defer { state.waitingForHandle = nil }
      return state.waitingForHandle
    }
    waiting?.resume()
  }

  fileprivate func sawNoCancel() {
    let cancel: (@Sendable () -> Void)? = state.withLock { state in
      state.looks += 1
      guard state.looks == number, !state.fired else { return nil }
      state.fired = true
      return state.cancel
    }
    guard let cancel else { return }
    // From another thread, as a cancel from elsewhere comes: its handler may need a lock
    // that the code which looked holds. Then it finishes once that code lets the lock go,
    // after this look has returned, so the wait here is bounded.
    let done = DispatchSemaphore(value: 0)
    Thread {
      cancel()
      done.signal()
    }.start()
    _ = done.wait(timeout: .now() + .milliseconds(200))
  }
}

/// `Task.isCancelled` for every caller in the test process: the standard library's answer,
/// after which a ``CancelAfterCheck`` probe of the calling task may cancel it.
@_silgen_name("$sScTss5NeverORszABRs_rlE11isCancelledSbvgZ")
public func _workbookTaskIsCancelled() -> Bool {
  let cancelled = withUnsafeCurrentTask { $0?.isCancelled ?? false }
  if !cancelled { CancelAfterCheck.current?.sawNoCancel() }
  return cancelled
}

/// `Task.checkCancellation()` for every caller in the test process, as above.
@_silgen_name("$sScTss5NeverORszABRs_rlE17checkCancellationyyKFZ")
public func _workbookTaskCheckCancellation() throws {
  if _workbookTaskIsCancelled() { throw CancellationError() }
}

/// Runs a call once per look it makes at its cancellation, each time cancelled right after
/// that look (a ``CancelAfterCheck``): round 1 after its first look, round 2 after its
/// second, until a round in which the call makes no more looks; that round is cancelled in
/// the usual way once the call has settled. Every round must end within two seconds, however
/// it ends: the test checks each round's result.
///
/// - Parameters:
///   - operationName: The call, for the deadline's message ("receive()").
///   - lostCancelCause: The likely cause when a round cancelled right after a look never
///     ends, in the exercise's words: the cancel was lost between the look and the store.
///   - makeCall: A fresh call for each round, on a fresh subject (a new channel, a new
///     promise), so that no round sees another's state.
/// - Returns: Each round's look number and how its call ended; the last round is the one
///   cancelled in the usual way.
public func cancellingAfterEachLook<T: Sendable>(
  _ operationName: String,
  lostCancelCause: String,
  sourceLocation: SourceLocation = #_sourceLocation,
  _ makeCall: @Sendable () -> @Sendable () async throws -> T
) async throws -> [(look: Int, fired: Bool, result: Result<T, any Error>)] {
  var rounds: [(look: Int, fired: Bool, result: Result<T, any Error>)] = []
  for look in 1...8 {
    let call = makeCall()
    let ended = Locked(false)
    let (task, probe) = CancelAfterCheck.task(cancelledAfterLook: look) {
      defer { ended.withLock { $0 = true } }
      return try await call()
    }
    // The call either reaches this look (and is cancelled there), ends, or waits having
    // looked fewer times: then it is cancelled as any caller would be.
    _ = await eventually(within: .milliseconds(300)) { probe.fired || ended.value }
    let fired = probe.fired
    if !fired { task.cancel() }
    let result = try await withDeadline(
      .seconds(2),
      fired
        ? "\(operationName), cancelled right after its look number \(look) at its cancellation"
        : "\(operationName), cancelled while it waited",
      likelyCause: {
        fired
          ? "the cancel came right after \(operationName) found its task not cancelled (look "
            + "\(look) at Task.isCancelled or Task.checkCancellation()), and nothing ended the "
            + "call: either the cancel was lost between that look and the store ("
            + lostCancelCause + "), or onCancel found the continuation and took it away "
            + "without resuming it (the runtime then says it leaked)"
          : "cancelling a waiting \(operationName) must end it"
      },
      sourceLocation: sourceLocation
    ) { await task.result }
    rounds.append((look, fired, result))
    if !fired { break }
  }
  return rounds
}

/// Expects every round of ``cancellingAfterEachLook(_:lostCancelCause:sourceLocation:_:)``
/// to have ended with `CancellationError`, naming the round that did not.
///
/// - Parameter caller: The call as the learner knows it ("a receive()").
public func expectEveryRoundThrewCancellationError<T: Sendable>(
  _ rounds: [(look: Int, fired: Bool, result: Result<T, any Error>)],
  caller: String,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  for round in rounds {
    let when =
      round.fired
      ? "right after its look \(round.look) at its cancellation" : "while it waited"
    #expect(
      throws: CancellationError.self,
      "\(caller) cancelled \(when) must throw CancellationError",
      sourceLocation: sourceLocation
    ) { try round.result.get() }
  }
}
