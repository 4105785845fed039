import LegacyKit
import Synchronization
import Testing
import WorkbookTesting

@testable import ExactlyOnce

// Serialized, so that a crash happens while one test runs, not while another is creating the
// racing threads: the runtime's crash report has to pause every thread, and a thread being
// created can keep it waiting.
@Suite("3.2 Resume once", .serialized)
struct ResumeOnceTests {
  static let hint =
    "ResumeOnce never lets the first call through to the continuation; the first "
    + "resume must resume it"

  static let twice: [CallbackScript] = [
    CallbackScript(timing: .synchronously, times: 2), .twice,
    CallbackScript(timing: .after(.milliseconds(100)), times: 2), .default,
  ]

  @Test("weigh(on:) returns the first reading, however the scale repeats it", arguments: twice)
  func weighReturnsTheFirstReading(script: CallbackScript) async throws {
    let scale = BluetoothScale(
      replies: [.success(71.5), .success(71.4)], delivery: .scripted(script))

    let weight = try await withDeadline(.seconds(2), "weigh(on:)", hint: Self.hint) {
      try await weigh(on: scale)
    }
    // Let the repeats arrive, so a second resume crashes here and not in another test.
    await eventually("every repeat of the reading to be delivered") {
      scale.callbacksDelivered == script.times
    }

    #expect(weight == 71.5)
    #expect(scale.measurements == 1)
  }

  @Test("weigh(on:) throws when the first reply is an error, even if a reading follows")
  func weighThrowsTheFirstError() async throws {
    let scale = BluetoothScale(replies: [.failure(ScaleError.notSteady), .success(70)])

    await #expect(throws: ScaleError.notSteady) {
      try await withDeadline(.seconds(2), "weigh(on:)", hint: Self.hint) {
        try await weigh(on: scale)
      }
    }
    await eventually("the reading after the error to be delivered") {
      scale.callbacksDelivered == 2
    }
  }

  @Test("weigh(on:) survives four threads reporting at the same moment, 200 times over")
  func weighSurvivesSimultaneousRepeats() async throws {
    let readings = [70.0, 70.5, 71.0, 71.5]
    let scale = BluetoothScale(
      replies: readings.map { .success($0) }, delivery: .simultaneous(count: readings.count))

    for round in 1...200 {
      let weight = try await withDeadline(.seconds(2), "weigh(on:)", hint: Self.hint) {
        try await weigh(on: scale)
      }
      #expect(readings.contains(weight))
      let delivered = await eventually("all four repeats of measurement \(round) to be delivered") {
        scale.callbacksDelivered == round * readings.count
      }
      guard delivered else { break }
    }
    #expect(scale.measurements == 200)
  }

  @Test("The same scale weighs twice, each time with its own continuation")
  func reuse() async throws {
    let scale = BluetoothScale(replies: [.success(64.2)], delivery: .scripted(.twice))

    for _ in 1...2 {
      let weight = try await withDeadline(.seconds(2), "weigh(on:)", hint: Self.hint) {
        try await weigh(on: scale)
      }
      #expect(weight == 64.2)
    }
    await eventually("every repeat to be delivered") { scale.callbacksDelivered == 4 }
    #expect(scale.measurements == 2)
  }

  @Test("The first resume wins; later ones return false and change nothing")
  func firstResumeWins() async throws {
    let (value, accepted) = try await withDeadline(
      .seconds(2), "a continuation wrapped in ResumeOnce", hint: Self.hint
    ) {
      var accepted: [Bool] = []
      let value = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
        let once = ResumeOnce(continuation)
        accepted = [
          once.resume(returning: 1), once.resume(returning: 2), once.resume(returning: 3),
        ]
      }
      return (value, accepted)
    }

    #expect(value == 1)
    #expect(accepted == [true, false, false])
  }

  @Test("An error can win too, and a value sent after it is ignored")
  func firstErrorWins() async throws {
    let (outcome, accepted) = try await withDeadline(
      .seconds(2), "a continuation wrapped in ResumeOnce", hint: Self.hint
    ) {
      var accepted: [Bool] = []
      do {
        let value = try await withCheckedThrowingContinuation {
          (continuation: CheckedContinuation<Int, any Error>) in
          let once = ResumeOnce(continuation)
          accepted = [once.resume(throwing: ScaleError.notSteady), once.resume(returning: 70)]
        }
        return (Result<Int, any Error>.success(value), accepted)
      } catch {
        return (Result<Int, any Error>.failure(error), accepted)
      }
    }

    #expect(throws: ScaleError.notSteady) { try outcome.get() }
    #expect(accepted == [true, false])
  }

  @Test("Thousands of rounds of threads racing to resume: exactly one wins every round")
  func racingThreads() async throws {
    let rounds = 2_000
    let racers = 4
    var badRounds: [String] = []

    for round in 0..<rounds {
      let race = Race()
      let value = try await withDeadline(
        .seconds(2), "a continuation wrapped in ResumeOnce", hint: Self.hint
      ) {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
          let once = ResumeOnce(continuation)
          callSimultaneously(racers) { racer in
            if once.resume(returning: racer) { race.won(by: racer) }
          } completion: {
            race.finish()
          }
        }
      }
      try await withDeadline(
        .seconds(2), "the racing threads to return",
        hint: "resume(returning:) blocks, for example waiting for a lock it already holds"
      ) {
        await race.allFinished()
      }

      let winners = race.winners
      if winners != [value] {
        badRounds.append("round \(round): resumed with \(value), true returned to \(winners)")
      }
    }

    #expect(
      badRounds.isEmpty,
      """
      resume(returning:) must return true to exactly one caller, the one whose value the \
      continuation received; \(badRounds.count) of \(rounds) rounds went wrong, first: \
      \(badRounds.prefix(3).joined(separator: "; "))
      """)
  }
}

/// What happened in one round of ``ResumeOnceTests/racingThreads()``.
private final class Race: Sendable {
  private struct State {
    var winners: [Int] = []
    var finished = false
    var waiter: CheckedContinuation<Void, Never>?
  }

  private let state = Mutex(State())

  /// The racers whose resume returned true.
  var winners: [Int] { state.withLock { $0.winners } }

  func won(by racer: Int) {
    state.withLock { $0.winners.append(racer) }
  }

  /// Called once every racer has returned.
  func finish() {
    let waiter = state.withLock { state in
      state.finished = true
      return state.waiter.take()
    }
    waiter?.resume()
  }

  /// Returns once every racer has returned.
  func allFinished() async {
    await withCheckedContinuation { continuation in
      let done = state.withLock { state in
        if !state.finished { state.waiter = continuation }
        return state.finished
      }
      if done { continuation.resume() }
    }
  }
}
