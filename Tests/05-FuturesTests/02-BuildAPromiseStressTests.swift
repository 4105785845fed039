import Testing
import WorkbookTesting

@testable import Futures

/// A completer's own error, so the test can tell which completer's failure won.
private struct CompleterError: Error, Equatable {
  var tag: Int
}

extension BuildAPromiseTests {
  @Test(
    "Completions from random threads race awaiters arriving and being cancelled: each gets the one result"
  )
  func randomThreadsRace() async throws {
    var problems: [String] = []

    for round in 1...150 {
      let promise = Promise<Int>()
      let completers = Int.random(in: 1...4)
      let attempted = Countdown(completers)
      let winners = Locked<[Int]>([])
      // Even completers succeed with their tag, odd ones fail with it, each from a random
      // thread after a random moment.
      for completer in 0..<completers {
        let tag = round * 100 + completer
        onRandomThread(within: .microseconds(300)) {
          let won =
            completer % 2 == 0
            ? promise.succeed(tag) : promise.fail(CompleterError(tag: tag))
          if won { winners.withLock { $0.append(tag) } }
          attempted.arrive()
        }
      }
      // Awaiters arrive before, during and after the completion; about a third of them are
      // cancelled from another thread at some moment, perhaps after they got the result.
      let awaiters = (0..<8).map { index in
        Task {
          if index % 2 == 1 { try? await Task.sleep(for: .microseconds(Int.random(in: 0...300))) }
          return try await promise.value
        }
      }
      let victims = Set(awaiters.indices.filter { _ in Int.random(in: 0..<3) == 0 })
      for victim in victims {
        onRandomThread(within: .microseconds(300)) { awaiters[victim].cancel() }
      }

      var outcomes: [Result<Int, any Error>] = []
      for (index, awaiter) in awaiters.enumerated() {
        outcomes.append(
          try await withDeadline(
            .seconds(2), "promise.value in awaiter \(index + 1) of round \(round)",
            hint: "an awaiter was lost while the promise was completed from random threads and "
              + "other awaiters were cancelled; every path must resume each continuation once"
          ) {
            await awaiter.result
          })
      }
      try await withDeadline(
        .seconds(2), "the completion attempts of round \(round) to return",
        hint: "complete(with:) blocks, for example waiting for a lock it already holds"
      ) {
        await attempted.reached()
      }

      let won = winners.value
      guard won.count == 1, let winner = won.first else {
        problems.append("round \(round): \(won.count) of \(completers) completions won")
        continue
      }
      for (index, outcome) in outcomes.enumerated() {
        switch outcome {
        case .success(let value) where value == winner && winner % 2 == 0:
          break
        case .failure(let error as CompleterError) where error.tag == winner && winner % 2 == 1:
          break
        case .failure(is CancellationError) where victims.contains(index):
          break
        case .success(let value):
          problems.append("round \(round): awaiter \(index + 1) got \(value), \(winner) won")
        case .failure(let error):
          problems.append("round \(round): awaiter \(index + 1) threw \(error), \(winner) won")
        }
      }
      if promise.waitingCount != 0 {
        problems.append("round \(round): \(promise.waitingCount) left in `waiting`")
      }
      if problems.count >= 3 { break }
    }

    #expect(
      problems.isEmpty,
      """
      exactly one completion must win, every awaiter must get its result (or \
      CancellationError, if cancelled before it), and nothing may stay in `waiting`: \
      \(problems.prefix(3).joined(separator: "; "))
      """)
  }
}
