import Dispatch

/// A pedometer SDK in the pre-concurrency style: it asks the sensor hub for today's step
/// count and answers through a completion handler on the hub's own queue.
///
/// Like most real frameworks of its era, it makes no promise about threads: the handler
/// is an ordinary (not `@Sendable`) closure, and it runs wherever `script` says, usually on
/// a background queue. It answers each request exactly once and can be asked again.
/// Use it from one thread at a time (the main thread, in the workbook).
public final class StepCounter {
  /// The count the next request reports.
  public var steps: Int
  /// When and on which thread the next request is answered. Its `times` must be 1.
  public var script: CallbackScript {
    didSet { precondition(script.times == 1, "a StepCounter answers every request exactly once") }
  }
  /// How many times ``fetchTodaysSteps(completion:)`` has been called.
  public private(set) var requestCount = 0

  public init(steps: Int, script: CallbackScript = .default) {
    precondition(script.times == 1, "a StepCounter answers every request exactly once")
    self.steps = steps
    self.script = script
  }

  /// Asks the sensor hub for today's step count.
  ///
  /// - Parameter completion: Called exactly once with the count, on the thread the script
  ///   chooses: for the default script, a background queue, never the caller's thread.
  public func fetchTodaysSteps(completion: @escaping (Int) -> Void) {
    requestCount += 1
    let steps = self.steps
    script.deliver { completion(steps) }
  }
}
