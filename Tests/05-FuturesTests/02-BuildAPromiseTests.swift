import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import Futures

private enum LoginError: Error, Equatable {
  case rejected
}

private let resumeHint =
  "complete(with:) must resume every continuation stored in `waiting`, each exactly once, "
  + "and take them all out"
private let lateHint =
  "an awaiter that arrives after the promise has a result must return it at once; check "
  + "`result` before you store a continuation"
private let cancelHint =
  "a cancelled awaiter must throw CancellationError straight away, before the promise has "
  + "a result: wrap the wait in withTaskCancellationHandler, and in onCancel take this "
  + "awaiter's continuation out of `waiting` and resume it"
private let alreadyCancelledHint =
  "this task was cancelled before it stored its continuation, so onCancel ran first and "
  + "found nothing to resume; check Task.isCancelled under the same lock where you store "
  + "the continuation"

/// Starts `count` tasks that await `promise`, and waits until every one of them is stored
/// in it. Says whether they were.
private func startAwaiters<Value>(
  _ count: Int, of promise: Promise<Value>
) async -> (tasks: [Task<Value, any Error>], allWaiting: Bool) {
  let tasks = (0..<count).map { _ in Task { try await promise.value } }
  let allWaiting = await eventually { promise.waitingCount == count }
  return (tasks, allWaiting)
}

/// The awaiters' results, in order, each within a deadline.
private func results<Value>(
  of tasks: [Task<Value, any Error>], hint: String
) async throws -> [Result<Value, any Error>] {
  var results: [Result<Value, any Error>] = []
  for (index, task) in tasks.enumerated() {
    let result = try await withDeadline(
      .seconds(2), "promise.value in awaiter \(index + 1) of \(tasks.count)", hint: hint
    ) {
      await task.result
    }
    results.append(result)
  }
  return results
}

private func isCancellation(_ result: Result<some Any, any Error>) -> Bool {
  if case .failure(let error) = result { return error is CancellationError }
  return false
}

@Suite("5.2 Build a promise")
struct BuildAPromiseTests {
  @Test(
    "An awaiter gets the value when the promise is fulfilled later",
    arguments: [CallbackScript.synchronously, .default, .later(.milliseconds(100))])
  func awaiterGetsTheValue(script: CallbackScript) async throws {
    let promise = Promise<String>()
    let (awaiters, waiting) = await startAwaiters(1, of: promise)
    #expect(waiting, "an awaiter of a promise with no result must be stored in `waiting`")

    script.deliver { promise.succeed("token-1") }

    let token = try await withDeadline(.seconds(2), "promise.value", hint: resumeHint) {
      try await awaiters[0].value
    }
    #expect(token == "token-1")
    #expect(promise.waitingCount == 0, "a resumed awaiter must be taken out of `waiting`")
  }

  @Test("The first result wins; later attempts are ignored and say so")
  func firstResultWins() async throws {
    let promise = Promise<String>()
    let (awaiters, _) = await startAwaiters(1, of: promise)

    let first = promise.succeed("token-1")
    let second = promise.succeed("token-2")
    let failure = promise.fail(LoginError.rejected)

    #expect(first == true, "the first attempt completes the promise and returns true")
    #expect(second == false, "a second attempt is ignored and returns false")
    #expect(failure == false, "a failure after a value is ignored and returns false")
    let waited = try await withDeadline(.seconds(2), "promise.value", hint: resumeHint) {
      try await awaiters[0].value
    }
    let late = try await withDeadline(.seconds(2), "promise.value", hint: lateHint) {
      try await promise.value
    }
    #expect(waited == "token-1")
    #expect(late == "token-1")
  }

  @Test("Of many threads completing the promise at the same moment, exactly one wins")
  func oneOfManyWins() async throws {
    let rounds = 20_000
    let promises = (0..<rounds).map { _ in Promise<Int>() }
    let wins = Locked(Array(repeating: 0, count: rounds))

    let finished = await onThreadsAtOnce(threads: 2, rounds: rounds) { thread, round in
      if promises[round].succeed(thread) {
        wins.withLock { $0[round] += 1 }
      }
    }

    let winners = wins.value
    let wrongRounds = winners.filter { $0 != 1 }.count
    let mostWinners = winners.max() ?? 0
    #expect(finished, "a call to succeed(_:) never returned")
    #expect(
      wrongRounds == 0,
      """
      \(wrongRounds) of \(rounds) promises did not have exactly one winner (up to \
      \(mostWinners)): deciding that there is no result yet and storing the new one must \
      happen in one withLock
      """)
  }

  @Test("A failure is thrown to every awaiter, early or late")
  func failureReachesEveryone() async throws {
    let promise = Promise<String>()
    let (awaiters, waiting) = await startAwaiters(5, of: promise)
    #expect(waiting, "every awaiter of a promise with no result must be stored in `waiting`")

    #expect(promise.fail(LoginError.rejected))
    let late = Task { try await promise.value }

    for result in try await results(of: awaiters + [late], hint: resumeHint) {
      #expect(throws: LoginError.rejected) { try result.get() }
    }
  }

  @Test("Any number of awaiters all get the one value", arguments: [2, 10, 100])
  func manyAwaiters(count: Int) async throws {
    let promise = Promise<Int>()
    let (awaiters, waiting) = await startAwaiters(count, of: promise)
    #expect(waiting, "every awaiter of a promise with no result must be stored in `waiting`")

    DispatchQueue.global().async { promise.succeed(42) }

    let values = try await results(of: awaiters, hint: resumeHint).map { try $0.get() }
    #expect(values == Array(repeating: 42, count: count))
    #expect(promise.waitingCount == 0, "resumed awaiters must be taken out of `waiting`")
  }

  @Test("Awaiting a promise that has its value returns at once, without storing anything")
  func lateAwaitersReturnAtOnce() async throws {
    let promise = Promise<Int>()
    promise.succeed(8)

    let values = try await withDeadline(.seconds(2), "promise.value", hint: lateHint) {
      var values: [Int] = []
      for _ in 0..<100 { values.append(try await promise.value) }
      return values
    }

    #expect(values == Array(repeating: 8, count: 100))
    #expect(promise.waitingCount == 0, "nothing is stored once the promise has its value")
  }

  @Test("A cancelled awaiter throws CancellationError at once; the others keep waiting")
  func cancelledAwaiterLeavesTheOthers() async throws {
    let promise = Promise<String>()
    let (awaiters, waiting) = await startAwaiters(3, of: promise)
    #expect(waiting, "every awaiter of a promise with no result must be stored in `waiting`")

    awaiters[1].cancel()
    let cancelled = try await withDeadline(
      .seconds(2), "promise.value in the cancelled awaiter", hint: cancelHint
    ) {
      await awaiters[1].result
    }

    #expect(isCancellation(cancelled), "a cancelled awaiter throws CancellationError")
    #expect(
      promise.waitingCount == 2,
      "the cancelled awaiter's continuation must be taken out of `waiting`; the others stay")

    promise.succeed("token-3")
    let values = try await results(of: [awaiters[0], awaiters[2]], hint: resumeHint)
    #expect(values.map { try? $0.get() } == ["token-3", "token-3"])
    #expect(promise.waitingCount == 0)
  }

  @Test("An awaiter whose task is already cancelled throws CancellationError at once")
  func alreadyCancelledAwaiter() async throws {
    let promise = Promise<String>()
    let awaiter = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await promise.value
    }

    let result = try await withDeadline(
      .seconds(2), "promise.value in an already cancelled task", hint: alreadyCancelledHint
    ) {
      await awaiter.result
    }

    #expect(isCancellation(result), "a cancelled awaiter throws CancellationError")
    #expect(promise.waitingCount == 0, "a cancelled awaiter leaves nothing in `waiting`")
  }

  @Test("Awaiters cancelled at any moment all end, and none is left stored")
  func cancellationRace() async throws {
    let promise = Promise<Int>()
    let awaiters = (0..<200).map { _ in Task { try await promise.value } }
    // Cancel from another thread while the awaiters are still starting to wait, so some are
    // cancelled before they store a continuation, some while, and some after.
    Thread {
      for awaiter in awaiters {
        if Bool.random() { usleep(UInt32.random(in: 0...20)) }
        awaiter.cancel()
      }
    }.start()

    let outcomes = try await results(of: awaiters, hint: alreadyCancelledHint)

    #expect(outcomes.allSatisfy(isCancellation), "every cancelled awaiter throws CancellationError")
    #expect(promise.waitingCount == 0, "cancelled awaiters leave nothing in `waiting`")
  }

  @Test("Awaiters that arrive while the promise is being completed are never lost")
  func arrivalsRaceTheResult() async throws {
    for round in 1...2000 {
      let promise = Promise<Int>()
      // The completing task is started among the awaiters, so on a multi-core machine it
      // runs while they are arriving: some find the result, some are stored, and some are
      // in between when it comes.
      var awaiters: [Task<Int, any Error>] = []
      for index in 0..<8 {
        if index == 3 { Task { promise.succeed(round) } }
        awaiters.append(Task { try await promise.value })
      }

      let outcomes = try await withDeadline(
        .seconds(2), "promise.value in round \(round)",
        hint: "an awaiter that arrived while the promise was being completed was stored after "
          + "complete(with:) had taken everyone out; look for the result again in the "
          + "withLock that stores the continuation"
      ) {
        var outcomes: [Int?] = []
        for awaiter in awaiters { outcomes.append(try? await awaiter.value) }
        return outcomes
      }
      #expect(outcomes == Array(repeating: round, count: 8), "round \(round)")
      if outcomes != Array(repeating: round, count: 8) { return }
    }
  }

  @Test("Under stress, every awaiter that is not cancelled gets the one winning value")
  func stress() async throws {
    for round in 1...25 {
      let promise = Promise<Int>()
      let (early, waiting) = await startAwaiters(48, of: promise)
      guard waiting else {
        Issue.record("round \(round): the 48 awaiters were never all stored in `waiting`")
        return
      }

      // Eight threads try to complete the promise at the same moment, while more awaiters
      // arrive and a ninth thread cancels about a third of all awaiters at random moments.
      let start = DispatchGroup()
      start.enter()
      let attempts = Locked<[(value: Int, won: Bool)]>([])
      for attempt in 1...8 {
        Thread {
          start.wait()
          let won = promise.succeed(attempt * 100 + round)
          attempts.withLock { $0.append((attempt * 100 + round, won)) }
        }.start()
      }
      let late = (0..<16).map { _ in Task { try await promise.value } }
      let awaiters = early + late
      let victims = Set(awaiters.indices.filter { _ in Int.random(in: 0..<3) == 0 })
      Thread {
        start.wait()
        for index in victims.shuffled() {
          if Bool.random() { usleep(UInt32.random(in: 0...50)) }
          awaiters[index].cancel()
        }
      }.start()
      start.leave()

      let outcomes = try await results(
        of: awaiters,
        hint: "an awaiter was lost while the promise was completed from many threads and "
          + "other awaiters were cancelled; every path must resume each continuation once")
      let allAttempted = await eventually { attempts.value.count == 8 }

      let winners = attempts.value.filter(\.won)
      #expect(allAttempted, "round \(round): a completion attempt never returned")
      #expect(
        winners.count == 1,
        "round \(round): exactly one of 8 simultaneous attempts must win; \(winners.count) did")
      guard let winner = winners.first?.value else { return }
      var wrong: [String] = []
      for (index, outcome) in outcomes.enumerated() {
        switch outcome {
        case .success(let value) where value == winner:
          break
        case .success(let value):
          wrong.append("awaiter \(index + 1) got \(value), but \(winner) won")
        case .failure(let error) where error is CancellationError && victims.contains(index):
          break
        case .failure(let error):
          wrong.append("awaiter \(index + 1) threw \(error) without being cancelled")
        }
      }
      #expect(wrong.isEmpty, "round \(round): \(wrong.prefix(3).joined(separator: "; "))")
      #expect(
        promise.waitingCount == 0,
        "round \(round): \(promise.waitingCount) continuations were left in `waiting`")
      if !wrong.isEmpty || winners.count != 1 || promise.waitingCount != 0 { return }
    }
  }
}
