import LegacyKit
import Testing
import WorkbookTesting

@testable import Callbacks

// The view model is main-actor isolated, so these tests run on the main actor too.
@MainActor
@Suite("1.6 Swift 6 isolation")
struct MainActorIsolationTests {
  static let hint =
    "the pedometer's handler never resumes the continuation, or refresh() never awaits it"

  /// What went wrong when `steps` is not `expected` right after `refresh()` returned.
  static func notShown(_ steps: Int?, expected: Int) -> Comment {
    guard let steps else {
      return """
        refresh() returned before updating steps: it must await the count (suspend on a \
        continuation) and set steps itself, not leave it to a task or queue that runs later
        """
    }
    return "refresh() showed \(steps) steps, not the \(expected) the pedometer reported"
  }

  @Test(
    "refresh() shows today's count wherever the pedometer calls back",
    arguments: [CallbackScript.synchronously, .default, .later()])
  func refreshShowsTheCount(script: CallbackScript) async throws {
    let counter = StepCounter(steps: 8_412, script: script)
    let model = StepsViewModel(counter: counter)

    try await withDeadline(.seconds(2), "refresh()", hint: Self.hint) {
      await model.refresh()
    }

    #expect(model.steps == 8_412, Self.notShown(model.steps, expected: 8_412))
    #expect(
      counter.requestCount == 1,
      "refresh() asked the pedometer \(counter.requestCount) times; it should ask exactly once")
  }

  @Test("refresh() returns only once the count is on screen, even when it arrives late")
  func refreshWaitsForTheCount() async throws {
    let counter = StepCounter(steps: 2_048, script: .later(.milliseconds(200)))
    let model = StepsViewModel(counter: counter)

    try await withDeadline(.seconds(2), "refresh()", hint: Self.hint) {
      await model.refresh()
    }

    // Back on the main actor right after the await: the state must already be updated,
    // not left to a task that may run later.
    #expect(model.steps == 2_048, Self.notShown(model.steps, expected: 2_048))
  }

  @Test("Refreshing again shows the new count")
  func refreshingAgainShowsTheNewCount() async throws {
    let counter = StepCounter(steps: 100)
    let model = StepsViewModel(counter: counter)
    try await withDeadline(.seconds(2), "refresh()", hint: Self.hint) { await model.refresh() }
    #expect(model.steps == 100, Self.notShown(model.steps, expected: 100))

    counter.steps = 4_321
    try await withDeadline(.seconds(2), "a second refresh()", hint: Self.hint) {
      await model.refresh()
    }

    #expect(model.steps == 4_321, Self.notShown(model.steps, expected: 4_321))
    #expect(
      counter.requestCount == 2,
      "two refreshes should ask the pedometer twice, not \(counter.requestCount) times")
  }
}
