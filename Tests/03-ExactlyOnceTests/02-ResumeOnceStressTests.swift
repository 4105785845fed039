import Testing
import WorkbookTesting

@testable import ExactlyOnce

/// A racer's own error, so the test can tell which racer's failure won.
private struct RacerError: Error, Equatable {
  var racer: Int
}

extension ResumeOnceTests {
  @Test(
    "Values and errors from random threads at random moments: exactly one resume wins, 400 times"
  )
  func randomThreadsAndMoments() async throws {
    let rounds = 400
    var badRounds: [String] = []

    for round in 0..<rounds {
      let racers = Int.random(in: 2...6)
      let returned = Countdown(racers)
      let winners = Locked<[Int]>([])
      // Even racers resume with their number, odd ones throw it; one of them may call
      // synchronously, inside the continuation's body, as some legacy code does.
      let synchronous = Bool.random() ? Int.random(in: 0..<racers) : nil

      let outcome = try await withDeadline(
        .seconds(2), "a continuation wrapped in ResumeOnce, round \(round)", hint: Self.hint
      ) {
        do {
          return Result<Int, any Error>.success(
            try await withCheckedThrowingContinuation { continuation in
              let once = ResumeOnce(continuation)
              for racer in 0..<racers {
                let race: @Sendable () -> Void = {
                  let won =
                    racer % 2 == 0
                    ? once.resume(returning: racer)
                    : once.resume(throwing: RacerError(racer: racer))
                  if won { winners.withLock { $0.append(racer) } }
                  returned.arrive()
                }
                if racer == synchronous { race() } else { onRandomThread(race) }
              }
            })
        } catch {
          return Result<Int, any Error>.failure(error)
        }
      }
      try await withDeadline(
        .seconds(2), "the racing callbacks of round \(round) to return",
        hint: "resume(with:) blocks, for example waiting for a lock it already holds"
      ) {
        await returned.reached()
      }

      let won = winners.value
      let resumedWith: Int? =
        switch outcome {
        case .success(let racer): racer
        case .failure(let error): (error as? RacerError)?.racer
        }
      if won.count != 1 || won.first != resumedWith {
        badRounds.append(
          "round \(round): \(racers) racers, true returned to \(won), the continuation got "
            + "\(resumedWith.map(String.init) ?? "something else")")
      }
    }

    #expect(
      badRounds.isEmpty,
      """
      of racers calling from random threads, exactly one resume must return true, and the \
      continuation must get that racer's value or error; \(badRounds.count) of \(rounds) \
      rounds went wrong, first: \(badRounds.prefix(3).joined(separator: "; "))
      """)
  }
}
