import Dispatch
import Foundation
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

  @Test("refresh() leaves the main actor free while it waits for the count")
  func refreshSuspends() async throws {
    // The pedometer answers, on a background thread, only once the test lets it (or after
    // a second, so that a refresh() that blocks the main thread cannot hang the tests).
    let gate = DispatchSemaphore(value: 0)
    let held = CallbackScheduler(name: "a background thread, when the test lets it") { work in
      Thread.detachNewThread {
        _ = gate.wait(timeout: .now() + 1)
        work()
      }
    }
    let counter = StepCounter(steps: 512, script: CallbackScript(timing: .scheduled(held)))
    let model = StepsViewModel(counter: counter)

    let refreshing = Task { await model.refresh() }
    // The refresh runs first; the test goes on once the main actor is free again.
    for _ in 0..<100 where counter.requestCount == 0 { await Task.yield() }
    let stepsWhileWaiting = model.steps
    gate.signal()
    try await withDeadline(.seconds(2), "refresh()", hint: Self.hint) { await refreshing.value }

    #expect(counter.requestCount == 1, "refresh() should ask the pedometer exactly once")
    #expect(
      stepsWhileWaiting == nil,
      """
      refresh() blocked the main actor instead of suspending: it held the main thread until \
      the count arrived (a semaphore, a dispatch group or another blocking wait), so nothing \
      else on the main actor could run meanwhile. Suspend with a continuation instead.
      """)
    #expect(model.steps == 512, Self.notShown(model.steps, expected: 512))
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
