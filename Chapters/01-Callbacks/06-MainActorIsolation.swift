import LegacyKit

/// The model behind a "steps today" screen. Like all UI state, it lives on the main actor.
@MainActor
final class StepsViewModel {
  private let counter: StepCounter
  /// Today's step count, once it has been fetched.
  private(set) var steps: Int?

  init(counter: StepCounter) {
    self.counter = counter
  }

  /// Fetches today's count from the pedometer and shows it.
  func refresh() async {
    // TODO: This traps at run time when the counter answers on a background queue. Make the
    // bridge safe to call back on any thread, keep `steps` updated on the main actor, and
    // say in a comment why the original version crashed.
    steps = await withCheckedContinuation { continuation in
      counter.fetchTodaysSteps { count in
        continuation.resume(returning: count)
      }
    }
  }
}
