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
    // Why the first version crashed: in Swift 6 a closure written inside a @MainActor method
    // is itself inferred to be isolated to the main actor, unless it is @Sendable. Because
    // `fetchTodaysSteps(completion:)` comes from a Swift 5 module, the compiler cannot prove
    // who calls the handler, so it makes the closure check on entry that it is running on
    // the main actor. The pedometer calls it on a background queue: the check fails and
    // the process traps (the runner reports a main-actor closure run on a background thread).
    //
    // The fix: the handler only resumes the continuation, which is safe from any thread, so
    // mark it @Sendable. A @Sendable closure is not isolated to any actor, so nothing is
    // checked, and the compiler now verifies it captures only Sendable values (the
    // continuation is one). The count crosses back to the main actor through the `await`:
    // after it, this method is on the main actor again, and updates `steps` there.
    let count = await withCheckedContinuation { continuation in
      counter.fetchTodaysSteps { @Sendable count in
        continuation.resume(returning: count)
      }
    }
    steps = count
  }
}
