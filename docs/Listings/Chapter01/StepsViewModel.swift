// Chapter 1, exercise 1.6: the starter's view model. It compiles without a warning, and
// traps at run time when the pedometer answers on its own queue.
import LegacyKit

// listing: traps
@MainActor
final class StepsViewModel {
  private let counter: StepCounter
  private(set) var steps: Int?
  // listing: elide // …

  init(counter: StepCounter) {
    self.counter = counter
  }
  // listing: show

  func refresh() async {
    steps = await withCheckedContinuation { continuation in
      counter.fetchTodaysSteps { count in
        continuation.resume(returning: count)
      }
    }
  }
}
// listing: end
