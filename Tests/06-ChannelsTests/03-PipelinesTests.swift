import Testing
import WorkbookTesting

@testable import Channels

private let endHint =
  "the pipeline did not end after its source was finished; when the workers' stage has "
  + "handed on its last result, finish the results stream so the consumer's loop ends"
private let stopHint =
  "the pipeline kept going after a stage failed or its task was cancelled: an error must "
  + "end the pipeline and cancel the other stages. Throwing out of the task group's body "
  + "cancels its children; waitForAll() does not (it waits for every child, then rethrows), "
  + "so run the consumer in the body, not as one more child"
private let transformFailHint =
  "the pipeline did not end after a transform threw: either it kept going (the workers' "
  + "stage must see a transform's error as it happens, so no try?, and wait on the pool with "
  + "next() before starting more than `workers` transforms), or a stage downstream kept "
  + "waiting for more (the results must end however the workers' stage ends, error included)"

private let failWhileRunningHint =
  "element 2's transform threw while element 1's ran on (for a minute, unless cancelled), and "
  + "the pipeline kept waiting: either the error was set aside (try?, or a loop that skips "
  + "errors), or the pool was drained with waitForAll(), which waits for every child before "
  + "it rethrows; a transform's error must end the group at once (next(), or for try await, "
  + "rethrows it) and cancel the transforms left"

private let onceHint =
  "each element must be transformed exactly once; read the source in one place, since a "
  + "sequence that several tasks iterate may give each of them every element"

/// A source that has already been fed `elements` and finished.
private func finishedSource(_ elements: some Sequence<Int>) -> AsyncStream<Int> {
  let (source, feed) = AsyncStream.makeStream(of: Int.self)
  for element in elements { feed.yield(element) }
  feed.finish()
  return source
}

/// A source that starts over for every iterator, as many AsyncSequences do (an array's
/// elements, the lines of a file): read it from two tasks and each gets every element.
private struct Numbers: AsyncSequence, Sendable {
  let range: ClosedRange<Int>

  init(_ range: ClosedRange<Int>) {
    self.range = range
  }

  struct AsyncIterator: AsyncIteratorProtocol {
    var upcoming: Int
    let last: Int

    mutating func next() async -> Int? {
      guard upcoming <= last else { return nil }
      await Task.yield()
      defer { upcoming += 1 }
      return upcoming
    }
  }

  func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(upcoming: range.lowerBound, last: range.upperBound)
  }
}

/// A source that yields 1, 2, 3… every few milliseconds and is never finished: only a
/// pipeline that stops by itself ends.
private func endlessSource() -> AsyncStream<Int> {
  AsyncStream { continuation in
    let feeding = Task {
      var element = 0
      while !Task.isCancelled {
        element += 1
        continuation.yield(element)
        try? await Task.sleep(for: .milliseconds(2))
      }
    }
    continuation.onTermination = { _ in feeding.cancel() }
  }
}

/// What the transforms and the consumer did, recorded from every task.
private final class Activity: Sendable {
  /// Transforms running now, the most that ever ran at once, and how many started.
  let transforms = Locked((running: 0, most: 0, started: 0))
  let consumed = Locked<[Int]>([])

  func transformStarted() {
    transforms.withLock {
      $0.running += 1
      $0.started += 1
      $0.most = max($0.most, $0.running)
    }
  }

  func transformEnded() {
    transforms.withLock { $0.running -= 1 }
  }

  /// A transform that takes a little while (`delay`) and multiplies by ten. Unless it
  /// `stopsWhenCancelled`, it finishes its work even in a cancelled task, as CPU-bound work
  /// does: then only the pipeline itself can report the cancellation.
  func timesTen(
    delay: Duration = .milliseconds(1), stopsWhenCancelled: Bool = true
  ) -> @Sendable (Int) async throws -> Int {
    { [self] element in
      transformStarted()
      defer { transformEnded() }
      if stopsWhenCancelled {
        try await Task.sleep(for: delay)
      } else {
        // The whole delay, cancelled or not: a sleep in a task of its own, which the
        // transform's cancellation does not reach.
        await Task.detached { try? await Task.sleep(for: delay) }.value
      }
      return element * 10
    }
  }

  func record(_ result: Int) async throws {
    consumed.withLock { $0.append(result) }
  }
}

/// The contract of `runPipeline`: each path, what the stages see, and the test that checks it
/// (— where a column does not apply, and why).
///
/// | path | results (count, order) | end, error | stages (running after return) | concurrency |
/// | --- | --- | --- | --- | --- |
/// | a finite source | each transformed once, consumed once: `everyElementOnce`; in order with one worker: `oneWorkerKeepsOrder`; as they are ready with two, a free worker taking the next element at once: `resultsAsTheyAreReady` | returns after the last result: `finishingTheSourceEndsIt` | — | — |
/// | an empty source | none: `emptySource` | returns at once: `emptySource` | — | — |
/// | N workers | — | — | — | N transforms at once, never more: `fansOutToTheWorkers` |
/// | a transform fails | — | its error: `failingTransform` | none: `failingTransform` | — |
/// | the consumer fails | — | its error: `failingConsumer` | none, even with transforms slow to stop: `failingConsumer` | — |
/// | the caller is cancelled before the call | — | `CancellationError`, not a clean end: `cancelledBeforeTheCall` | none: `cancelledBeforeTheCall` | — |
/// | the caller is cancelled | — | `CancellationError`, not a clean end: `cancellation` | none, even with transforms slow to stop: `cancellation` | — |
/// | slow transforms | — | — | — | the source read only as workers come free, at most `workers` + 1 ahead: `readsTheSourceAsWorkersFree` |
/// | a slow consumer | — | — | — | one result consumed at a time: `consumesOneAtATime` |
/// | the consumer busy with a result | — | — | — | the workers go on meanwhile, reading and transforming the next elements: `workersGoOnWhileTheConsumerWorks` |
/// | a transform fails among the last ones of a finite source | — | its error: `lastTransformFails`; at once, while another still runs: `failureWhileAnotherRuns` | that other one cancelled: `failureWhileAnotherRuns` | — |
/// | the source throws | — | its error, not a clean end: `sourceFails` | no transform running: `sourceFails` | — |
/// | a second call | — each call owns its channels and tasks: nothing is shared to reuse | | | |
@Suite("6.3 Pipelines")
struct PipelinesTests {
  @Test("Every element is transformed once and each result consumed once", arguments: [1, 3, 8])
  func everyElementOnce(workers: Int) async throws {
    let activity = Activity()

    try await withDeadline(.seconds(2), "runPipeline(…)", hint: endHint) {
      try await runPipeline(
        source: Numbers(1...60), workers: workers, transform: activity.timesTen(),
        consume: activity.record)
    }

    try #require(
      activity.transforms.value.started == 60,
      Comment(rawValue: onceHint))
    #expect(activity.consumed.value.sorted() == (1...60).map { $0 * 10 })
  }

  @Test("With one worker, results keep the source's order")
  func oneWorkerKeepsOrder() async throws {
    let activity = Activity()

    try await withDeadline(.seconds(2), "runPipeline(…)", hint: endHint) {
      try await runPipeline(
        source: Numbers(1...30), workers: 1, transform: activity.timesTen(),
        consume: activity.record)
    }

    #expect(activity.consumed.value == (1...30).map { $0 * 10 })
  }

  @Test("A result ready first is consumed first, and a free worker takes the next element")
  func resultsAsTheyAreReady() async throws {
    // Element 1's transform waits until the consumer has had element 3's result (or 3 s):
    // with two workers, the other one transforms 2, then 3, meanwhile.
    let thirdConsumed = Locked(false)
    let consumed = Locked<[Int]>([])

    try await withDeadline(.seconds(5), "runPipeline(…)", hint: endHint) {
      try await runPipeline(
        source: Numbers(1...3), workers: 2,
        transform: { element in
          if element == 1 {
            for _ in 0..<300 where !thirdConsumed.value {
              try await Task.sleep(for: .milliseconds(10))
            }
          }
          return element
        },
        consume: { result in
          consumed.withLock { $0.append(result) }
          if result == 3 { thirdConsumed.withLock { $0 = true } }
        })
    }

    let got = consumed.value
    #expect(
      got == [2, 3, 1],
      Comment(
        rawValue: got.first == 1
          ? "with two workers, element 2's result was ready while element 1's transform still ran, but the consumer got \(got): results must reach the consumer in the order they are ready, not in the source's order (one slow element must not hold back the others)"
          : "with two workers, element 1's transform ran long, and the consumer got \(got): the worker that finished element 2 was free, so it must take element 3 at once (a worker that waits for the other one's element, as in a batch, leaves the pool idle behind one slow element)"
      ))
  }

  @Test("Finishing the source closes the pipeline, after its last result is consumed")
  func finishingTheSourceEndsIt() async throws {
    let activity = Activity()
    let (source, feed) = AsyncStream.makeStream(of: Int.self)
    let running = Started {
      try await runPipeline(
        source: source, workers: 3, transform: activity.timesTen(), consume: activity.record)
    }
    for element in 1...10 {
      feed.yield(element)
      try await Task.sleep(for: .milliseconds(5))
    }
    try await expectStillWaiting(running, "runPipeline returned while its source was still open")

    feed.finish()

    try await running.value("runPipeline(…) after its source finished", hint: endHint)
    #expect(activity.consumed.value.sorted() == (1...10).map { $0 * 10 })
  }

  @Test("An empty source ends the pipeline at once")
  func emptySource() async throws {
    let activity = Activity()

    try await withDeadline(.seconds(2), "runPipeline(…)", hint: endHint) {
      try await runPipeline(
        source: finishedSource([]), workers: 2, transform: activity.timesTen(),
        consume: activity.record)
    }

    #expect(activity.consumed.value.isEmpty)
  }

  @Test(
    "Runs as many transforms at once as there are workers, and never more",
    arguments: [2, 4])
  func fansOutToTheWorkers(workers: Int) async throws {
    let activity = Activity()
    // Each transform waits (up to a second) until `workers` of them have run at once, then
    // lingers a little so that any extra ones would overlap too.
    let transform: @Sendable (Int) async throws -> Int = { element in
      activity.transformStarted()
      defer { activity.transformEnded() }
      _ = await eventually(within: .seconds(1)) { activity.transforms.value.most >= workers }
      try await Task.sleep(for: .milliseconds(10))
      return element
    }

    try await withDeadline(
      .seconds(5), "runPipeline(…)",
      likelyCause: {
        let seen = activity.transforms.value
        // Each transform waits up to a second for another to run beside it: one at a time,
        // 3 × workers of them take longer than the deadline.
        return seen.most == 1 && seen.started > 1
          ? "\(seen.started) transforms started, and never two at once although workers is "
            + "\(workers): each one waited a second for another to run beside it. The "
            + "transforms ran one after another, not in \(workers) workers at once"
          : endHint
      }
    ) {
      try await runPipeline(
        source: finishedSource(1...(3 * workers)), workers: workers, transform: transform,
        consume: activity.record)
    }

    let most = activity.transforms.value.most
    let why =
      most > workers
      ? "a transform started while all \(workers) workers were still busy, so the pool let "
        + "more run than it has workers"
      : "the pool never kept all its workers busy, though the source had elements waiting"
    #expect(most == workers, "\(most) transforms ran at once with \(workers) workers: \(why)")
    #expect(activity.consumed.value.sorted() == Array(1...(3 * workers)))
  }

  @Test("A failing transform fails the pipeline, and nothing runs after it returns")
  func failingTransform() async throws {
    let activity = Activity()
    let inputs = Locked<[Int]>([])
    // How many transforms had started when element 5's threw.
    let thrownAt = Locked<Int?>(nil)
    let transform: @Sendable (Int) async throws -> Int = { element in
      inputs.withLock { $0.append(element) }
      activity.transformStarted()
      defer { activity.transformEnded() }
      if element == 5 {
        thrownAt.withLock { $0 = activity.transforms.value.started }
        throw Boom(tag: element)
      }
      try await Task.sleep(for: .milliseconds(20))
      return element
    }

    await #expect(throws: Boom(tag: 5)) {
      try await withDeadline(
        .seconds(2), "runPipeline(…) with a failing transform",
        likelyCause: {
          let seen = activity.transforms.value
          let repeated = Dictionary(grouping: inputs.value, by: { $0 }).filter {
            $0.value.count > 1
          }
          if let element = repeated.keys.min() {
            return
              "element \(element) was transformed \(repeated[element]!.count) times: \(onceHint)"
          }
          if seen.most > 3 {
            return
              "\(seen.most) transforms ran at once with 3 workers (\(seen.started) started): "
              + "nothing waited for a free worker before starting more than `workers` "
              + "transforms, so the pipeline kept reading the endless source, and the error "
              + "that element 5's transform threw was not seen while it did"
          }
          if let thrown = thrownAt.value, seen.started > thrown {
            return
              "after element 5's transform threw, \(seen.started - thrown) more transforms "
              + "started: \(transformFailHint). If the error is not lost, what waits for it? "
              + "waitForAll() rethrows only once every child has ended, and a worker that reads "
              + "the source itself never ends while the source goes on"
          }
          return transformFailHint
        }
      ) {
        try await runPipeline(
          source: endlessSource(), workers: 3, transform: transform, consume: activity.record)
      }
    }

    let atReturn = activity.transforms.value
    #expect(atReturn.running == 0, "a transform was still running when runPipeline returned")
    try await Task.sleep(for: .milliseconds(100))
    #expect(
      activity.transforms.value.started == atReturn.started,
      "transforms started after runPipeline returned")
  }

  @Test("A failing consumer stops the pipeline, and nothing runs after it returns")
  func failingConsumer() async throws {
    let activity = Activity()
    let consume: @Sendable (Int) async throws -> Void = { result in
      try await activity.record(result)
      if activity.consumed.value.count == 3 { throw Boom(tag: 3) }
    }

    await #expect(throws: Boom(tag: 3)) {
      try await withDeadline(
        .seconds(2), "runPipeline(…) with a failing consumer",
        likelyCause: {
          let started = activity.transforms.value.started
          let consumed = activity.consumed.value.count
          // The consumer fails at its third result: it never got that far.
          if consumed == 0 && started >= 10 {
            return "\(started) transforms started, and the consumer got none of their results: "
              + "the consumer must take results while the workers still run (this source never "
              + "ends, so a consumer that waits for the workers' stage to end first waits "
              + "forever), and no result may be thrown away on its way"
          }
          return consumed < 3 && started >= 10
            ? "\(started) transforms started, but the consumer got only \(consumed) results "
              + "(it fails at its third): the other results were lost between the workers "
              + "and the consumer. Is a result gathered while waiting for a free worker "
              + "thrown away?"
            : stopHint
        }
      ) {
        try await runPipeline(
          source: endlessSource(), workers: 3,
          transform: activity.timesTen(delay: .milliseconds(5), stopsWhenCancelled: false),
          consume: consume)
      }
    }

    let atReturn = activity.transforms.value
    #expect(atReturn.running == 0, "a transform was still running when runPipeline returned")
    try await Task.sleep(for: .milliseconds(100))
    #expect(
      activity.transforms.value.started == atReturn.started,
      "transforms started after runPipeline returned")
  }

  @Test("Cancelling the pipeline's task stops every stage and throws CancellationError")
  func cancellation() async throws {
    let activity = Activity()
    let running = Started {
      try await runPipeline(
        source: endlessSource(), workers: 3,
        transform: activity.timesTen(delay: .milliseconds(5), stopsWhenCancelled: false),
        consume: activity.record)
    }
    _ = await eventually { activity.consumed.value.count >= 3 || running.isFinished }
    try #require(!running.isFinished, "runPipeline returned although its source never finished")

    running.cancel()

    let result = try await running.result("a cancelled runPipeline(…)", hint: stopHint)
    #expect(throws: CancellationError.self, "a cancelled pipeline must not look finished") {
      try result.get()
    }
    let atReturn = activity.transforms.value
    #expect(atReturn.running == 0, "a transform was still running when runPipeline returned")
    try await Task.sleep(for: .milliseconds(100))
    #expect(
      activity.transforms.value.started == atReturn.started,
      "transforms started after runPipeline returned")
  }

  @Test("A pipeline whose task is already cancelled throws CancellationError")
  func cancelledBeforeTheCall() async throws {
    let activity = Activity()
    let running = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await runPipeline(
        source: finishedSource(1...10), workers: 3, transform: activity.timesTen(),
        consume: activity.record)
    }
    let result = try await withDeadline(
      .seconds(2), "runPipeline(…) in a task already cancelled", hint: stopHint
    ) {
      await running.result
    }
    #expect(
      throws: CancellationError.self,
      "the pipeline's task was cancelled before it began, and runPipeline returned as if it had finished: a cancelled pipeline must not look finished"
    ) {
      try result.get()
    }
    #expect(
      activity.transforms.value.running == 0,
      "a transform was still running when runPipeline returned")
  }

  @Test("The consumer gets one result at a time, however many workers there are")
  func consumesOneAtATime() async throws {
    let consuming = Locked((now: 0, most: 0, count: 0))
    let consume: @Sendable (Int) async throws -> Void = { _ in
      consuming.withLock {
        $0.now += 1
        $0.most = max($0.most, $0.now)
        $0.count += 1
      }
      try await Task.sleep(for: .milliseconds(2))
      consuming.withLock { $0.now -= 1 }
    }

    try await withDeadline(.seconds(5), "runPipeline(…)", hint: endHint) {
      try await runPipeline(
        source: finishedSource(1...40), workers: 4, transform: { $0 }, consume: consume)
    }

    let seen = consuming.value
    #expect(
      seen.count == 40,
      "\(seen.count) of 40 results were consumed, by a consumer slower than the workers: the others were lost on their way from the workers to the consumer (a results stream that drops what waits, or one finished before the workers' last results were handed on)"
    )
    #expect(
      seen.most == 1,
      "up to \(seen.most) consume calls ran at once: the consumer is one stage that takes the results one at a time, in one loop, while the workers go on; calling it from each worker makes it as concurrent as they are"
    )
  }

  @Test("The workers go on while the consumer handles a result")
  func workersGoOnWhileTheConsumerWorks() async throws {
    let activity = Activity()
    let calls = Locked(0)
    let startedMeanwhile = Locked<Int?>(nil)
    // The first result holds the consumer until the workers have started every element the
    // source still has, or two seconds have passed: stages that run at once start them
    // meanwhile; a consumer awaited by the stage that reads the source stops them all.
    let consume: @Sendable (Int) async throws -> Void = { _ in
      let call = calls.withLock { count in
        count += 1
        return count
      }
      guard call == 1 else { return }
      _ = await eventually(within: .seconds(2)) { activity.transforms.value.started == 4 }
      startedMeanwhile.withLock { $0 = activity.transforms.value.started }
    }

    try await withDeadline(.seconds(10), "runPipeline(…)", hint: endHint) {
      try await runPipeline(
        source: finishedSource(1...4), workers: 2, transform: activity.timesTen(),
        consume: consume)
    }

    let started = startedMeanwhile.value
    #expect(
      started == 4,
      "while the consumer handled the first result, the workers started \(started.map(String.init) ?? "none") of the 4 elements and no more for two seconds: the stages did not run at once; the consumer's work held up the reading of the source, and the workers sat idle until it was done"
    )
  }

  @Test("A transform that fails among the last ones of a finite source fails the pipeline")
  func lastTransformFails() async throws {
    // Element 20 is the last; its transform throws once the source has ended, while the
    // other workers finish theirs.
    let transform: @Sendable (Int) async throws -> Int = { element in
      try await Task.sleep(for: .milliseconds(element == 20 ? 20 : 1))
      if element == 20 { throw Boom(tag: 20) }
      return element
    }

    let outcome = await Result {
      try await withDeadline(.seconds(5), "runPipeline(…)", hint: endHint) {
        try await runPipeline(
          source: finishedSource(1...20), workers: 4, transform: transform, consume: { _ in })
      }
    }

    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    let failure: (any Error)? = if case .failure(let error) = outcome { error } else { nil }
    #expect(
      (failure as? Boom) == Boom(tag: 20),
      "the last element's transform threw Boom(tag: 20), after the source had ended, and runPipeline \(failure.map { "threw \($0)" } ?? "returned normally"): the workers' errors must reach the caller until the last one has finished (a group left to end by itself throws its children's errors away)"
    )
  }

  @Test("A transform that fails while another runs on ends the pipeline at once, cancelling it")
  func failureWhileAnotherRuns() async throws {
    // Element 1's transform would run a minute unless cancelled; element 2's fails at once.
    // The source has ended by then, so this is the pipeline's last stretch.
    let firstCancelled = Locked(false)
    let outcome = await Result {
      try await withDeadline(.seconds(5), "runPipeline(…)", hint: failWhileRunningHint) {
        try await runPipeline(
          source: finishedSource(1...2), workers: 2,
          transform: { element in
            if element == 2 {
              try await Task.sleep(for: .milliseconds(20))
              throw Boom(tag: 2)
            }
            do {
              try await Task.sleep(for: .seconds(60))
            } catch {
              firstCancelled.withLock { $0 = true }
              throw error
            }
            return element
          },
          consume: { _ in })
      }
    }

    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    let failure: (any Error)? = if case .failure(let error) = outcome { error } else { nil }
    #expect(
      (failure as? Boom) == Boom(tag: 2) && firstCancelled.value,
      "element 2's transform threw Boom(tag: 2) while element 1's still ran, and runPipeline \(failure.map { "threw \($0)" } ?? "returned normally")\(firstCancelled.value ? "" : ", without cancelling element 1's transform"): the first error must end the pipeline at once and cancel the transforms still running"
    )
  }

  @Test("A source that throws fails the pipeline with its error, and no transform outlives it")
  func sourceFails() async throws {
    let (source, feed) = AsyncThrowingStream.makeStream(of: Int.self)
    for element in 1...10 { feed.yield(element) }
    feed.finish(throwing: Boom(tag: 0))
    let running = Locked(0)
    let transform: @Sendable (Int) async throws -> Int = { element in
      running.withLock { $0 += 1 }
      defer { running.withLock { $0 -= 1 } }
      try? await Task.sleep(for: .milliseconds(5))
      return element
    }

    let outcome = await Result {
      try await withDeadline(.seconds(5), "runPipeline(…) over a failing source", hint: endHint) {
        try await runPipeline(source: source, workers: 3, transform: transform, consume: { _ in })
      }
    }
    let stillRunning = running.value

    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    let failure: (any Error)? = if case .failure(let error) = outcome { error } else { nil }
    #expect(
      (failure as? Boom) == Boom(tag: 0),
      "the source threw Boom(tag: 0) after its 10th element, and runPipeline \(failure.map { "threw \($0)" } ?? "returned normally"): an error the source throws fails the pipeline, it is not the source's normal end"
    )
    #expect(
      stillRunning == 0,
      "runPipeline returned while \(stillRunning) transforms were still running: no stage may outlive the pipeline"
    )
  }

  @Test("The source is read only as workers come free, never far ahead of them")
  func readsTheSourceAsWorkersFree() async throws {
    let pulled = Locked(0)
    let source = AsyncStream<Int> { continuation in
      let feeding = Task {
        for element in 1...1_000 where !Task.isCancelled {
          continuation.yield(element)
          try? await Task.sleep(for: .milliseconds(1))
        }
        continuation.finish()
      }
      continuation.onTermination = { _ in feeding.cancel() }
    }.map { element -> Int in
      pulled.withLock { $0 += 1 }
      return element
    }
    // Every transform waits until the test lets it go: 3 workers are busy for good.
    let release = Locked(false)
    let transform: @Sendable (Int) async throws -> Int = { element in
      _ = await eventually(within: .seconds(3)) { release.value }
      return element
    }

    let pipeline = Task {
      try await runPipeline(source: source, workers: 3, transform: transform, consume: { _ in })
    }
    try await Task.sleep(for: .milliseconds(300))
    let readAhead = pulled.value
    pipeline.cancel()
    release.withLock { $0 = true }
    _ = try await withDeadline(.seconds(5), "runPipeline(…) after a cancel", hint: stopHint) {
      await pipeline.result
    }

    #expect(
      readAhead <= 4,
      "with 3 workers all busy, the source was read \(readAhead) elements ahead: read the next element only when a worker is free to take it (at most workers + 1 ahead), or a fast source fills memory while slow workers fall behind"
    )
  }
}
