import CoroutineKit
import Dispatch
import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import Futures

private enum ForecastError: Error, Equatable {
  case stationOffline
}

private let scripts: [CallbackScript] = [
  .synchronously, .default, .later(.milliseconds(100)), .twice,
]

private let valueHint =
  "value must resume its continuation with the future's result: register with "
  + "whenComplete and resume(with:) whatever it receives"
private let cancelledComment = Comment(
  rawValue:
    "a cancelled future must throw its own error, CoFutureError.cancelled, to every awaiter; "
    + "CancellationError is for a cancelled task, and this task was not cancelled")
private let failureHint =
  "a failed future never resumed its awaiter; whenSuccess only hears about values, "
  + "whenComplete hears about errors and cancellations too"

/// The contract of `CoFuture.value`: each path, what the awaiter and the future see, and the
/// test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | the future, other awaiters | thread, timing |
/// | --- | --- | --- | --- |
/// | completes later, at once, on another thread, twice | its value: `returnsTheValue`; a hundred futures one after another, each its own: `eachFutureItsOwnValue` | — | — |
/// | already has a value | its value, at once: `returnsAtOnceWhenComplete` | — | — |
/// | fails | its error: `throwsTheError` | — | — |
/// | cancelled by its owner, before or while awaited | `CoFutureError.cancelled`, not `CancellationError`: `throwsWhenCancelledBefore`, `throwsWhenCancelledDuring` | — | — |
/// | computed by a coroutine, or mapped | its value: `coroutineFutures` | — | — |
/// | many awaiters, early and late | each the value: `manyAwaiters` | — | 200 waiters hold no thread each: `waitersHoldNoThreads` |
/// | the awaiting task is cancelled | the value or `CancellationError`, and it ends: `cancelledAwaiterLeavesTheFuture` | not cancelled; the others get the value: `cancelledAwaiterLeavesTheFuture` | — |
/// | completed on the awaiter's own thread | its value: `suspendsInsteadOfBlocking` | — | suspends instead of blocking: `suspendsInsteadOfBlocking` |
/// | completed 500 ms later, on another thread | its value: `doesNotPoll` | — | suspends once, no polling: `doesNotPoll` |
/// | completed seconds later | its value, however long it takes: `waitsAsLongAsItTakes` | — | no time limit of its own (a caller sets one if it wants one) |
/// | cancelled after it returned | — nothing is left to cancel: `value` registers nothing that outlives it | | |
/// | the awaiting task cancelled while the future's callback is inside its resume | the value or `CancellationError`, and no deadlock: `cancelledDuringTheResume` | — | — |
/// | the awaiting task cancelled just as the future completes, in an answer that reads, resumes and clears its continuation under separate locks | — not caught: both sides must land between two of the answer's own lock steps, which call nothing a test can pause; the runtime names the double resume if it happens | | |
@Suite("5.1 Bridge a future")
struct BridgeAFutureTests {
  @Test("Returns the value of the future, whenever it arrives", arguments: scripts)
  func returnsTheValue(script: CallbackScript) async throws {
    let future = scriptedFuture(.success("sunny"), script)

    let forecast = try await withDeadline(
      .seconds(2), "future.value", hint: valueHint, on: OneThreadExecutor()
    ) {
      try await future.value
    }

    #expect(forecast == "sunny")
  }

  @Test("Returns at once for a future that already has a value")
  func returnsAtOnceWhenComplete() async throws {
    let future = CoFuture(value: 21)

    let values = try await withDeadline(
      .seconds(2), "future.value", hint: valueHint, on: OneThreadExecutor()
    ) {
      var values: [Int] = []
      for _ in 0..<100 { values.append(try await future.value) }
      return values
    }

    #expect(
      values == Array(repeating: 21, count: 100),
      "every await of a completed future returns its value")
  }

  @Test("Throws the future's error", arguments: scripts)
  func throwsTheError(script: CallbackScript) async throws {
    let future: CoFuture<String> = scriptedFuture(.failure(ForecastError.stationOffline), script)

    await #expect(throws: ForecastError.stationOffline) {
      try await withDeadline(
        .seconds(2), "future.value", hint: failureHint, on: OneThreadExecutor()
      ) {
        try await future.value
      }
    }
  }

  @Test("Throws CoFutureError.cancelled for a future cancelled before it is awaited")
  func throwsWhenCancelledBefore() async throws {
    let future = CoPromise<String>()
    future.cancel()

    await #expect(throws: CoFutureError.cancelled, cancelledComment) {
      try await withDeadline(
        .seconds(2), "future.value", hint: failureHint, on: OneThreadExecutor()
      ) {
        try await future.value
      }
    }
  }

  @Test("Throws CoFutureError.cancelled when the future is cancelled while it is awaited")
  func throwsWhenCancelledDuring() async throws {
    let future = CoPromise<String>()
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { future.cancel() }

    await #expect(throws: CoFutureError.cancelled, cancelledComment) {
      try await withDeadline(
        .seconds(2), "future.value", hint: failureHint, on: OneThreadExecutor()
      ) {
        try await future.value
      }
    }
  }

  @Test("Every task awaiting the same future gets its value, early or late")
  func manyAwaiters() async throws {
    let future = CoPromise<Int>()
    // On a thread of their own, so that an answer that blocks cannot starve the test run.
    let executor = OneThreadExecutor()
    let early = (0..<50).map { _ in Task(executorPreference: executor) { try await future.value } }
    try await Task.sleep(for: .milliseconds(50))
    DispatchQueue.global().async { future.success(7) }
    let late = (0..<50).map { _ in Task(executorPreference: executor) { try await future.value } }

    var values: [Int] = []
    for (index, awaiter) in (early + late).enumerated() {
      let value = try await withDeadline(
        .seconds(2), "future.value in task \(index + 1) of 100",
        hint: "every awaiter needs a continuation of its own, resumed by a callback of "
          + "its own: register one whenComplete callback per await"
      ) {
        try await awaiter.value
      }
      values.append(value)
    }

    #expect(
      values == Array(repeating: 7, count: 100),
      "every task awaiting the future gets the value it was completed with")
  }

  @Test("Works for a future computed by a coroutine, and for a mapped future")
  func coroutineFutures() async throws {
    let computed = DispatchQueue.global().coroutineFuture { () -> Int in
      Coroutine.delay(.milliseconds(50))
      return 6
    }
    let mapped = computed.map { "\($0 * 7) °C" }

    let reading = try await withDeadline(
      .seconds(2), "future.value", hint: valueHint, on: OneThreadExecutor()
    ) {
      try await mapped.value
    }

    #expect(reading == "42 °C")
  }

  @Test("A cancelled awaiter does not cancel the future for the others")
  func cancelledAwaiterLeavesTheFuture() async throws {
    let future = CoPromise<String>()
    let executor = OneThreadExecutor()
    let leaving = Task(executorPreference: executor) { try await future.value }
    let staying = Task(executorPreference: executor) { try await future.value }
    try await Task.sleep(for: .milliseconds(50))

    leaving.cancel()
    try await Task.sleep(for: .milliseconds(50))
    DispatchQueue.global().async { future.success("rain") }

    let stayed = try await withDeadline(
      .seconds(2), "future.value",
      hint: "the remaining awaiter was never resumed once the future had a value"
    ) {
      await staying.result
    }
    // A value or a CancellationError: either way, the cancelled awaiter has to end too.
    let left = try await withDeadline(
      .seconds(2), "future.value in the cancelled task", hint: valueHint
    ) {
      await leaving.result
    }
    let futureWasCancelled = future.isCanceled
    #expect(
      futureWasCancelled == false,
      """
      one awaiter's cancellation cancelled the shared future, and every other awaiter got \
      CoFutureError.cancelled; value must not cancel the future
      """)
    #expect(try stayed.get() == "rain")
    // Its own outcome, once the future is known not to be cancelled (that cause comes first).
    if !futureWasCancelled {
      switch left {
      case .success(let value):
        #expect(value == "rain", "the cancelled awaiter got \(value), not the future's value")
      case .failure(let error):
        #expect(
          error is CancellationError,
          "the cancelled awaiter threw \(error): it either gets the future's value or stops with CancellationError"
        )
      }
    }
  }

  @Test("An awaiter cancelled while the future's callback resumes it does not deadlock")
  func cancelledDuringTheResume() async throws {
    // The future completes on a thread of its own once the awaiter has suspended; the
    // awaiting task is cancelled from another thread while that completion is still inside
    // its resume. Returning the value and throwing CancellationError are both fine.
    let future = CoPromise<String>()
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
      future.success("sun")
    }
    do {
      let value = try await withCancellationRacingResume(
        .seconds(2), "future.value", hint: valueHint
      ) {
        try await future.value
      }
      #expect(value == "sun", "the awaiter got \(value), not the future's value")
    } catch is CancellationError {
      // Cancelled in time: fine.
    } catch is DeadlineExceeded {
      // Recorded as never resumed.
    }
  }

  @Test("Suspends instead of blocking: the future is completed on the awaiter's own thread")
  func suspendsInsteadOfBlocking() async throws {
    let future = CoPromise<String>()
    let executor = OneThreadExecutor()
    // Completed on the thread that awaits, once `value` has started there: as a future
    // completed on the main queue is, for a caller on the main actor. A `value` that blocks
    // its thread until the future has a result never lets that completion run.
    completeOnThread(of: executor, afterJobs: 1) { future.success("sunny") }

    let forecast = try await withDeadline(
      .seconds(2), "future.value",
      hint: "value never resumed when the future was completed on the awaiter's own thread; "
        + "register with whenComplete and resume(with:) whatever it receives",
      on: executor
    ) {
      try await future.value
    }

    #expect(forecast == "sunny")
  }

  @Test("200 tasks awaiting one future hold no thread each while they wait")
  func waitersHoldNoThreads() async throws {
    #if os(Linux)
    let future = CoPromise<Int>()
    let waiters = 200
    let before = threadCount()
    // On a thread of their own, so that a `value` that blocks its thread holds that one
    // thread only, not the pool the other tests need.
    let executor = OneThreadExecutor()
    let tasks = (0..<waiters).map { _ in
      Task(executorPreference: executor) { try await future.value }
    }
    // A waiter that parks a thread of its own adds one thread each; give them time to.
    let grew = await eventually(within: .milliseconds(500)) {
      threadCount() - before >= waiters / 2
    }
    let added = threadCount() - before
    future.success(7)
    let values = try await withDeadline(
      .seconds(5), "\(waiters) awaits of future.value", hint: valueHint
    ) {
      var values: [Int] = []
      for task in tasks { values.append(try await task.value) }
      return values
    }

    #expect(
      !grew,
      """
      while \(waiters) tasks awaited one future, the process gained \(added) threads: each \
      await parks a thread of its own (a coroutine blocked in await(), say) instead of \
      suspending. Threads are few and costly; a screen with a thousand cells waiting for \
      images would need a thousand of them
      """)
    #expect(values == Array(repeating: 7, count: waiters))
    #endif
  }

  @Test("Waits for the future as long as it takes, with no time limit of its own")
  func waitsAsLongAsItTakes() async throws {
    let future = scriptedFuture(.success("fog"), .later(.milliseconds(1500)))
    let outcome = await Result {
      try await withDeadline(
        .seconds(4), "future.value of a future that takes 1.5 s", hint: valueHint
      ) {
        try await future.value
      }
    }
    switch outcome {
    case .success(let forecast): #expect(forecast == "fog")
    case .failure(let error as DeadlineExceeded): throw error
    case .failure(let error):
      Issue.record(
        "future.value threw \(error) for a future that completed after 1.5 seconds with a value: value waits for the future's own result however long it takes; a time limit is the caller's to choose, and this future had none"
      )
    }
  }

  @Test("Suspends once until the future calls back, instead of polling it")
  func doesNotPoll() async throws {
    let future = scriptedFuture(.success("cloudy"), .later(.milliseconds(500)))
    let executor = OneThreadExecutor()

    let forecast = try await withDeadline(
      .seconds(2), "future.value", hint: valueHint, on: executor
    ) {
      try await future.value
    }

    let jobs = executor.jobsRun
    #expect(
      jobs <= 4,
      """
      future.value polled instead of suspending: its task ran \(jobs) times on its thread \
      while the future took half a second, where one suspension runs twice. Likely cause: \
      a loop that checks isCompleted (or a captured result) and sleeps; suspend in \
      withCheckedThrowingContinuation until whenComplete calls back
      """)
    #expect(forecast == "cloudy")
  }

  @Test("Each future gives its own value, one after another, a hundred times")
  func eachFutureItsOwnValue() async throws {
    // Each future is let go before the next is made, so a new one is often made where the
    // last one was: anything kept by a future's identity answers for the wrong future.
    let wrong = try await withDeadline(.seconds(5), "future.value", hint: valueHint) {
      var wrong: [(expected: Int, got: Int)] = []
      for number in 0..<100 {
        let promise = CoPromise<Int>()
        let future: CoFuture<Int> = promise
        DispatchQueue.global().async { promise.success(number) }
        let got = try await future.value
        if got != number { wrong.append((number, got)) }
      }
      return wrong.map { "\($0.expected) gave \($0.got)" }
    }

    #expect(
      wrong.isEmpty,
      "of a hundred futures, awaited one after another, \(wrong.count) gave another future's value (the first: \(wrong.first ?? "")): each await gives the value of the future it awaits; a result kept from an earlier future (keyed by its identity, say) answers for a new one made in the same place"
    )
  }
}

#if os(Linux)
/// The number of threads this process has now (Linux's /proc).
private func threadCount() -> Int {
  guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
    let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") }),
    let count = Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces))
  else { return 0 }
  return count
}
#endif
