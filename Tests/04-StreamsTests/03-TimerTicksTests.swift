import Dispatch
import Testing
import WorkbookTesting

@testable import Streams

private let interval = Duration.milliseconds(20)

private let ticksHint =
  "schedule the timer, yield a Tick from its event handler, and activate it (a new source is "
  + "inactive until then)"
private let cancelHint =
  "when the timer is cancelled, no tick will ever come again: finish the stream from the "
  + "timer's cancel handler (setCancelHandler)"

/// A new timer source on a queue of its own, for one test.
///
/// Dispatch stops the program when a source that was never activated is released, so every
/// test hands its timer to ``dispose(_:)`` when it is done, whatever happened.
private struct TestTimer: @unchecked Sendable {
  // Dispatch sources are thread-safe; the protocol just does not say so.
  let source: any DispatchSourceTimer
  /// The queue the timer fires on.
  let queue: DispatchQueue

  init() {
    queue = DispatchQueue(label: "TimerTicksTests")
    queue.setSpecific(key: onATimersQueue, value: true)
    source = DispatchSource.makeTimerSource(queue: queue)
  }

  var isCancelled: Bool { source.isCancelled }

  func cancel() { source.cancel() }

  /// Returns once whatever the timer's queue was running, or had been handed, has run.
  func drain() async {
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      queue.async { done.resume() }
    }
  }

  /// Cancels the timer, and activates it in case nobody did (activating twice does nothing).
  func dispose() {
    source.cancel()
    source.activate()
  }
}

/// Set on every test timer's queue, so code can tell whether it runs inside a timer's handler.
private let onATimersQueue = TimerQueueKey().key

/// Holds the key; `@unchecked` because Dispatch does not mark its keys Sendable everywhere,
/// and this one is only ever read.
private struct TimerQueueKey: @unchecked Sendable {
  let key = DispatchSpecificKey<Bool>()
}

/// Iterates a new stream of ticks until it has `count`, then breaks out of the loop; the
/// stream is released with the loop, as in an app.
private func first(
  _ count: Int, of timer: TestTimer, sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [Tick] {
  let got = Locked(0)
  return try await withDeadline(
    .seconds(2), "the loop over ticks(of:every:)",
    diagnosis: {
      // One tick and then nothing for the rest of the 2 seconds: the timer fired only once.
      got.value == 1
        ? "the loop got one tick, then none for the rest of 2 seconds, although the interval "
          + "is \(interval): the timer fired once and never again. Was it scheduled without a "
          + "repeating interval?"
        : ticksHint
    },
    sourceLocation: sourceLocation
  ) {
    var seen: [Tick] = []
    for await tick in ticks(of: timer.source, every: interval) {
      seen.append(tick)
      got.withLock { $0 += 1 }
      if seen.count == count { break }
    }
    return seen
  }
}

/// The contract of `ticks(of:every:)`: each path, what the loop and the timer see, and the
/// test that checks it (— where a column does not apply, and why).
///
/// | path | ticks (numbers, order) | end | timer | timing |
/// | --- | --- | --- | --- | --- |
/// | ticks read, the loop breaks | numbered from 1, in order: `ticksComeInOrder` | — | cancelled: `cancelsWhenTheLoopBreaks` | the first an interval from now, then one per interval: `ticksComeInOrder` |
/// | a slow loop | the newest tick, no backlog: `aSlowConsumerGetsTheNewestTick`; at once, and the next only from a new firing (no tick kept, two kept): `theNewestTickAfterAPause` | — | — | — |
/// | an interval of whole seconds (1 s) | — | — | — | the first tick not before half the interval: `aWholeSecondIsKept` |
/// | a timer firing every 50 µs | never a tick after a newer one, never two with one number (a number worked out from the elapsed time repeats): `fastTicksNeverGoBack` | — | — | — |
/// | a tick yielded later, by a task or another queue | the loop is woken from inside the handler, so no tick can overtake another: `ticksArePassedOnInTheHandler` | — | — | — |
/// | the task is cancelled | — | the loop ends: `cancelsWhenTheTaskIsCancelled` | cancelled: `cancelsWhenTheTaskIsCancelled` | — |
/// | the stream is dropped unread | — | — | cancelled: `cancelsWhenTheStreamIsDropped` | — |
/// | somebody else cancels the timer | — | the stream ends: `endsWhenTheTimerIsCancelled` | — | — |
/// | a tick that fires late | `firedAt` is when it fired: the timer held with suspend() past its due time, the tick after the resume stamped no earlier than the resume: `theNewestTickAfterAPause` | — | — | — |
/// | onTermination waits on a semaphore for the timer's cancel handler | — not caught: every tick and end is right, and the wait lasts as long as the timer's queue takes to run the handler, microseconds on an idle machine; only a probe of the ending thread's waits would see it | | | |
/// | a one-shot timer re-armed from each firing | — not caught: each period is the interval plus the handler's microseconds of latency, and Dispatch's own lateness on a busy machine is larger, so no verdict on the spacing of ticks can tell drift from load | | | |
/// | a leeway on the schedule (even a whole interval) | — not caught, and not a break: the contract says every interval, from one interval from now, with no tolerance, and Dispatch never fires on the dot; a leeway only lets it fire later, which libdispatch on Linux does not use (it arms the timer at the deadline: the same firing times with a leeway of 0 or of 1 s), and its own lateness on a busy machine, measured here at over two 20 ms intervals with no leeway, is larger than anything a leeway adds. The source does not report its leeway, and a fake one that did would judge a setting Apple recommends (some 10% for a repeating timer), not the ticks | | | |
/// | a second stream on the same timer | — a cancelled source cannot be restarted: one stream per timer | | | |
/// | a failure | — a timer cannot fail | | | |
@Suite("4.3 Timer ticks")
struct TimerTicksTests {
  @Test("Ticks come in order, numbered from 1, the first one an interval from now")
  func ticksComeInOrder() async throws {
    let timer = TestTimer()
    defer { timer.dispose() }
    let start = ContinuousClock.now

    let ticks = try await first(3, of: timer)

    #expect(
      ticks.map(\.number) == [1, 2, 3],
      Comment(rawValue: numberingMessage(ticks)))
    let first = try #require(ticks.first, "the stream ended before its first tick")
    let span = ticks.last!.firedAt - first.firedAt
    #expect(
      first.firedAt - start >= interval / 2,
      Comment(
        rawValue: span < interval
          ? "the first tick came at once, and three came within \(span), less than one "
            + "interval (\(interval)): the timer was scheduled with a shorter interval than it "
            + "was given"
          : "the first tick came at once: schedule it an interval from now"))
    #expect(
      ticks.last!.firedAt - first.firedAt >= interval,
      "three ticks came within less than an interval: schedule the timer to repeat every interval")
  }

  /// What a wrong numbering of the first three ticks says about its cause.
  private func numberingMessage(_ ticks: [Tick]) -> String {
    let numbers = ticks.map(\.number)
    guard let first = ticks.first, let last = ticks.last else { return "no tick came" }
    if first.number == 0 {
      return "the first tick was numbered 0: a tick's number counts the firings so far, this "
        + "one included, so the first one is 1"
    }
    // Firings far closer together than the interval: the timer runs too fast, and the
    // numbers jump because a newest-only buffer skips what the loop had no time to take.
    let span = last.firedAt - first.firedAt
    if ticks.count > 1, span < interval, last.number - first.number > ticks.count - 1 {
      return "the ticks were numbered \(numbers), and \(last.number - first.number + 1) "
        + "firings came within \(span), less than one interval (\(interval)): the timer "
        + "was scheduled with a shorter interval than it was given"
    }
    if first.number != 1 {
      return "the first tick of a new stream was numbered \(first.number): each stream counts "
        + "its own firings, from 1; a count shared by every stream, or left from an earlier "
        + "one, goes on where it was"
    }
    return "the first three ticks should be numbered 1, 2, 3, one per firing, in order"
  }

  @Test("A slow consumer gets the newest tick, not a backlog of old ones")
  func aSlowConsumerGetsTheNewestTick() async throws {
    let timer = TestTimer()
    defer { timer.dispose() }

    let (early, late, age) = try await withDeadline(
      .seconds(2), "the loop over ticks(of:every:)", hint: ticksHint
    ) {
      var iterator = ticks(of: timer.source, every: interval).makeAsyncIterator()
      let early = await iterator.next()
      // Busy for 15 intervals: the timer fires about 15 times meanwhile.
      try await Task.sleep(for: interval * 15)
      let late = await iterator.next()
      let age = late.map { ContinuousClock.now - $0.firedAt }
      return (early, late, age)
    }

    let before = try #require(early, "the stream ended before its first tick")
    let after = try #require(late, "the stream ended after one tick")
    // A tick that fired just now but carries a low number: the count skipped firings.
    let fresh = age! < interval * 7
    #expect(
      after.number >= before.number + 5,
      because(
        fresh
          ? "after tick \(before.number) and a pause of about 15 intervals, the consumer got a "
            + "tick that had just fired, numbered \(after.number): the timer fired about 15 "
            + "times meanwhile, and a tick's number must count every firing, those the "
            + "consumer never saw included"
          : "after tick \(before.number) and a long pause, the consumer got tick "
            + "\(after.number), an old one the buffer kept for it; keep only the newest "
            + "(bufferingNewest(1))"))
    #expect(
      age! < interval * 7,
      "the tick the consumer got after its pause had fired \(age!) before: keep only the newest")
  }

  @Test("A timer firing every 50 µs: each tick the loop reads is newer than the one before")
  func fastTicksNeverGoBack() async throws {
    let loopThread = OneThreadExecutor()
    var problems: [String] = []
    var repeats: [String] = []

    for round in 1...3 {
      let timer = TestTimer()
      defer { timer.dispose() }
      // The loop on a thread of its own, and the pool left whole (no pool check): work
      // handed to tasks gets both of its threads, as in an app.
      let (read, repeated, wentBack) = try await withDeadline(
        .seconds(3), "the loop over ticks(of:every:) at 50 µs", hint: ticksHint,
        on: loopThread, checksPool: false
      ) {
        var read = 0
        var last: Int?
        var repeated: [Int] = []
        var wentBack: [(Int, Int)] = []
        let start = ContinuousClock.now
        // A loop that reads as fast as it can for 300 ms. (Where the numbers start is the
        // first test's business; here only their order counts, and that no two are alike.)
        for await tick in ticks(of: timer.source, every: .microseconds(50)) {
          if let last, tick.number == last { repeated.append(last) }
          if let last, tick.number < last { wentBack.append((last, tick.number)) }
          last = max(last ?? tick.number, tick.number)
          read += 1
          if ContinuousClock.now - start > .milliseconds(300) { break }
        }
        return (read, repeated, wentBack)
      }
      // Two ticks with one number: two firings numbered alike, whatever order they came in.
      if let number = repeated.first {
        repeats.append(
          "round \(round): of \(read) ticks read, \(repeated.count) carried the number of "
            + "a tick read before it (tick \(number) twice)")
        break
      }
      if let (newer, older) = wentBack.first {
        problems.append(
          "round \(round): of \(read) ticks read, \(wentBack.count) came after a newer one "
            + "(tick \(older) after tick \(newer))")
        break
      }
    }

    #expect(
      repeats.isEmpty,
      """
      two firings got the same number: \(repeats.joined(separator: "; ")). A tick's number \
      counts the firings, each one more than the one before, so no two ticks share one. A \
      number worked out from the time gone by since the start (elapsed time divided by the \
      interval) repeats whenever a handler runs late, and skips when it runs early: \
      Dispatch never fires exactly on time
      """)
    #expect(
      problems.isEmpty,
      """
      the stream promises the newest tick: a tick must never reach the loop after a newer one \
      did: \(problems.joined(separator: "; ")). A progress display fed by it would jump \
      back. Pass each tick on before the timer's handler returns: work handed to a task of its \
      own may run in any order
      """)
  }

  @Test("Each tick reaches the waiting loop from inside the timer's handler")
  func ticksArePassedOnInTheHandler() async throws {
    // Order is a property no test run can prove by watching: ticks handed to tasks or to
    // another queue come out of order only when the machine happens to run them so. Where
    // the waiting loop is woken from is certain: by whoever yields the tick. Yielded in the
    // handler, a tick is in the stream before the next firing can start, so none can
    // overtake it.
    var elsewhere = 0
    var woken = 0
    for _ in 1...3 where woken == 0 {
      let timer = TestTimer()
      defer { timer.dispose() }
      let wakes = WakeWatch { DispatchQueue.getSpecific(key: onATimersQueue) == true }
      try await withDeadline(.seconds(2), "the loop over ticks(of:every:)", hint: ticksHint) {
        // Only a tick (or the end of the stream) hands the waiting loop back to the watch.
        await wakes.counting {
          var count = 0
          for await _ in ticks(of: timer.source, every: interval) {
            count += 1
            if count == 4 { break }
          }
        }
      }
      elsewhere += wakes.fromElsewhere
      woken += wakes.fromInside + wakes.fromElsewhere
    }

    #expect(
      elsewhere == 0,
      """
      of the \(woken) times a tick woke the waiting loop, \(elsewhere) came from outside the \
      timer's handler: the tick was yielded later, by a task or a queue the handler passed it \
      to, and such ticks may reach the loop in any order, an older one after a newer one. \
      Yield each tick in the handler itself, before it returns: a tick must never reach the \
      loop after a newer one
      """)
  }

  @Test("Cancels the timer when the loop breaks")
  func cancelsWhenTheLoopBreaks() async throws {
    let timer = TestTimer()
    defer { timer.dispose() }

    let ticks = try await first(2, of: timer)
    let cancelled = await eventually { timer.isCancelled }

    #expect(ticks.count == 2)
    #expect(
      cancelled,
      "the timer still runs after the loop ended: cancel it in the continuation's onTermination")
  }

  @Test("Cancels the timer when the task iterating is cancelled")
  func cancelsWhenTheTaskIsCancelled() async throws {
    let timer = TestTimer()
    defer { timer.dispose() }
    let stream = ticks(of: timer.source, every: interval)
    let received = Locked(0)
    let task = Task {
      for await _ in stream {
        received.withLock { $0 += 1 }
      }
    }
    defer { task.cancel() }

    let ticking = await eventually { received.value >= 1 }
    try #require(ticking, Comment(rawValue: ticksHint))
    task.cancel()
    try await withDeadline(
      .seconds(2), "the cancelled loop over ticks(of:every:)",
      hint: "a cancelled loop over an AsyncStream ends by itself; is the event handler blocking?"
    ) {
      await task.value
    }
    let cancelled = await eventually { timer.isCancelled }

    #expect(
      cancelled,
      because(
        "the timer still runs after the task was cancelled: cancel it in the continuation's "
          + "onTermination"))
  }

  @Test("Cancels the timer when the stream is dropped without being iterated")
  func cancelsWhenTheStreamIsDropped() async throws {
    let timer = TestTimer()
    defer { timer.dispose() }

    _ = ticks(of: timer.source, every: interval)
    let cancelled = await eventually { timer.isCancelled }

    #expect(
      cancelled,
      because(
        "nobody holds the stream, so it has ended: cancel the timer in the continuation's "
          + "onTermination"))
  }

  @Test("Ends the stream when somebody else cancels the timer")
  func endsWhenTheTimerIsCancelled() async throws {
    let timer = TestTimer()
    defer { timer.dispose() }

    // A tick that fired just before the cancel may still be delivered: 2 or 3.
    let count = try await withDeadline(
      .seconds(2), "the loop over ticks(of:every:)", hint: cancelHint
    ) {
      var count = 0
      for await _ in ticks(of: timer.source, every: interval) {
        count += 1
        if count == 2 { timer.cancel() }
      }
      return count
    }

    #expect((2...3).contains(count), "the stream must end soon after the timer is cancelled")
  }

  @Test("An interval of a whole second: the first tick comes a second from now, not at once")
  func aWholeSecondIsKept() async throws {
    let timer = TestTimer()
    defer { timer.dispose() }
    let start = ContinuousClock.now
    let stream = ticks(of: timer.source, every: .seconds(1))
    let seen = Locked<[Tick]>([])
    let reader = Task {
      for await tick in stream {
        seen.withLock { $0.append(tick) }
        if seen.value.count == 2 { break }
      }
    }

    // A tick that comes within this wait must have fired a second after the start; none is
    // expected. Two of them mean the timer fires far more often than once a second.
    _ = await eventually(within: .milliseconds(150)) { seen.value.count == 2 }
    reader.cancel()
    _ = await reader.value

    let ticks = seen.value
    if let tick = ticks.first {
      #expect(
        tick.firedAt - start >= .milliseconds(500),
        Comment(
          rawValue: ticks.count < 2
            ? "with an interval of 1 second, tick \(tick.number) came \(tick.firedAt - start) "
              + "after the start: the first tick came at once: schedule it an interval from now"
            : "with an interval of 1 second, ticks \(ticks.map(\.number)) came within "
              + "\(ticks[1].firedAt - start) of the start: the timer was scheduled with a "
              + "shorter interval than it was given. A Duration is whole seconds plus a "
              + "fraction (its components); a conversion that keeps only one part loses the "
              + "other, and 1 second becomes 0"))
    }
  }

  @Test(
    "Back from a pause, a consumer gets the newest tick at once, stamped when it fired; the next one only when the timer fires again"
  )
  func theNewestTickAfterAPause() async throws {
    var problems: [String] = []
    for round in 1...3 where problems.isEmpty {
      let timer = TestTimer()
      defer { timer.dispose() }
      let resumedAt = Locked<ContinuousClock.Instant?>(nil)
      let (early, late, lateWhileHeld, next, nextWhileHeld) = try await withDeadline(
        .seconds(3), "the loop over ticks(of:every:)", hint: ticksHint
      ) {
        var iterator = ticks(of: timer.source, every: interval).makeAsyncIterator()
        let early = await iterator.next()
        // Busy for 8 intervals: the timer fires meanwhile.
        try await Task.sleep(for: interval * 8)
        // The timer is held, and a firing already on its way handled: nothing fires until it is
        // let go again, 3 intervals from now, from another thread.
        timer.source.suspend()
        await timer.drain()
        DispatchQueue.global().asyncAfter(deadline: .now() + (interval * 3).timeInterval) {
          resumedAt.withLock { $0 = .now }
          timer.source.resume()
        }
        let late = await iterator.next()
        let lateWhileHeld = resumedAt.value == nil
        let next = await iterator.next()
        let nextWhileHeld = resumedAt.value == nil
        return (early, late, lateWhileHeld, next, nextWhileHeld)
      }
      let before = try #require(early, "the stream ended before its first tick")
      let after = try #require(late, "the stream ended after one tick")
      let following = try #require(next, "the stream ended after two ticks")

      if !lateWhileHeld {
        // Nothing fired during the pause (a very busy machine): this round proves nothing.
        if after.number == before.number + 1 { continue }
        problems.append(
          "after tick \(before.number) and a pause, the timer had fired \(after.number - before.number - 1) "
            + "times, but the consumer got no tick until it fired again: the stream kept "
            + "no tick for a consumer that was not waiting, so a slow consumer that asks gets "
            + "nothing, up to a whole interval, instead of the newest tick at once")
      } else if nextWhileHeld {
        problems.append(
          "after a pause, the consumer got tick \(after.number), then at once tick "
            + "\(following.number), which had also fired before it asked: the buffer kept more "
            + "than the newest tick, so the first tick a slow consumer gets is a stale one")
      } else if let resumed = resumedAt.value, following.firedAt < resumed {
        problems.append(
          "tick \(following.number) fired when the held timer was let go, but is stamped "
            + "\(resumed - following.firedAt) earlier: firedAt must be when the timer fired, "
            + "not when the firing was due, or a late firing (a busy queue, a busy machine) "
            + "is stamped earlier than it happened")
      }
      _ = round
    }

    #expect(
      problems.isEmpty,
      Comment(
        rawValue: problems.joined(separator: "; ")
          + ". (The timer was held with suspend() during the pause, so the test knows which "
          + "firings came before the consumer asked.)"))
  }
}
