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
    // The bridge is written outside the main actor, so its handler is not isolated to any
    // actor and may run on the pedometer's queue. Back here, after the await, this method
    // is on the main actor again.
    steps = await todaysSteps(from: counter)
  }
}

/// Today's count, from a pedometer that answers on any thread.
///
/// `nonisolated(nonsending)`: it runs on its caller's actor, so the caller may pass its own
/// non-Sendable counter, and the closure it forms belongs to no actor.
nonisolated(nonsending) func todaysSteps(from counter: StepCounter) async -> Int {
  await withCheckedContinuation { continuation in
    counter.fetchTodaysSteps { count in
      continuation.resume(returning: count)
    }
  }
}
