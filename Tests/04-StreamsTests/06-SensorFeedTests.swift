import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import Streams

private struct SensorFault: Error, Equatable {}

private let endHint =
  "the sequence never ended: the sensor's didStop with .finished must finish the stream "
  + "(continuation.finish()), and is your delegate still alive? The sensor holds it weakly, "
  + "so something that lives as long as the stream (its onTermination closure) must hold it"
private let pausedForGood =
  "the sensor was paused and never resumed: once the caller has read half of the waiting "
  + "readings, resume() the sensor (an AsyncThrowingStream never tells its producer that a "
  + "value was read, so the sequence's iterator must)"
private let restartHint =
  "a sensor that stops with .interrupted has only dropped out: start() it again and go on; "
  + "the sequence ends only with .finished or .failed"
private let stopHint =
  "the sensor was still running after the loop ended: stop it in the continuation's "
  + "onTermination, however the stream ends (a break, a cancelled task and a dropped "
  + "stream end it as .cancelled, not .finished)"

/// Reads the whole sequence, or `limit` readings of it, within the deadline.
private func read(
  _ sensor: VibrationSensor, capacity: Int = 64, limit: Int = .max, hint: String = endHint
) async throws -> [Vibration] {
  try await withDeadline(.seconds(2), "for try await reading in vibrations(…)", hint: hint) {
    var readings: [Vibration] = []
    for try await reading in vibrations(from: sensor, capacity: capacity) {
      readings.append(reading)
      if readings.count == limit { break }
    }
    return readings
  }
}

private func numbers(_ readings: [Vibration]) -> [Int] { readings.map(\.number) }

/// Runs `loop` (which counts what it reads in `readCount`) in a task of its own, within the
/// deadline a paused-for-good sensor trips, and returns what it returns. Returns `nil`, with
/// an issue that names the cause, when the sensor sent more than `capacity` readings and
/// stopped before the loop got any: a paused sensor cannot, so they went to no delegate.
private func readUnlessTheStartWasMissed<T: Sendable>(
  _ sensor: VibrationSensor, capacity: Int, readCount: Locked<Int>,
  hint: String = pausedForGood, _ loop: @escaping @Sendable () async throws -> T
) async throws -> T? {
  let loopEnded = Locked(false)
  let reader = Task {
    defer { loopEnded.withLock { $0 = true } }
    return try await loop()
  }
  defer { reader.cancel() }
  let missedTheStart: @Sendable () -> Bool = {
    !loopEnded.value && readCount.value == 0 && !sensor.isRunning
      && sensor.readingsSent > capacity
  }
  let missed = try await withDeadline(
    .seconds(2), "for try await reading in vibrations(…)", hint: hint
  ) {
    _ = await eventually(within: .seconds(5)) { loopEnded.value || missedTheStart() }
    if missedTheStart() { return true }
    _ = await reader.result
    return false
  }
  guard !missed else {
    Issue.record(
      """
      the sensor sent \(sensor.readingsSent) readings and stopped, and the loop got none of \
      them: this sensor sends its first readings at once, as soon as it is started. Set the \
      delegate (and onTermination) before you call start()
      """)
    return nil
  }
  return try await reader.value
}

/// The contract of `vibrations(from:capacity:)`: each path, what the loop and the sensor
/// see, and the test that checks it (— where a column does not apply, and why).
///
/// | path | readings (count, order) | end, error | sensor (running, paused, starts) | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | a session, read to its end | all, in order: `readsToTheEnd` | ends with the session: `readsToTheEnd` | stopped: `readsToTheEnd` (its delegate may stay set while the app holds the ended sequence: the sensor holds it weakly, and every user sets its own before start()) | first reading inside `start()`: `readsToTheEnd` |
/// | a whole run and its end sent inside `start()` | 300, once each, in order, none lost at the end: `runInsideStart` | ends after the last one: `runInsideStart` | paused and resumed inside the run: `runInsideStart` | — |
/// | the sensor fails | the readings before it: `failure` | throws its error: `failure` | — | — |
/// | drops out | all, across restarts: `restartsAfterADropOut` | goes on | started again: `restartsAfterADropOut` | — |
/// | drops out, and the restart sends a reading inside `start()`, on the thread that restarts it | all, across restarts: `restartThatMeasuresAtOnce` (a lock held around `start()` is met again in `didMeasure`) | goes on | — | — |
/// | a slow reader | none lost, in order: `backPressure` | — | paused at capacity, resumed at half: `backPressure`; not before half: `staysPausedUntilHalfIsRead` | — |
/// | a pause that reaches the sensor 30 ms late | all, in order: `slowPauseIsNotOvertaken` | — | never paused for good by a pause that lands after the resume: `slowPauseIsNotOvertaken` | — |
/// | drops out while paused | none lost: `restartUnderPressure` | — | goes on, paused; never more than capacity unread across the drop-out: `restartUnderPressure`, and exactly: `dropOutKeepsTheCount` | — |
/// | the loop breaks | the ones read: `breakStops` | — | stopped: `breakStops` | — |
/// | the reading task is cancelled | — | the loop ends: `cancelStops` | stopped: `cancelStops` | — |
/// | the sequence is dropped unread | — | — | stopped: `droppedStops` | — |
/// | a second sequence after the first ended | its own readings: `restartsForANewSequence` | — | started again: `restartsForANewSequence`; not left paused by the first: `restartsAfterAPausedEnd` | — |
/// | the call returns | — | — | started by the call itself, before it returns, not by a task or the first loop: `startsBeforeReturning` | — |
/// | a slow sensor (2.5 s to its end) | — | ends with the session: `slowSensor` | — | the wait blocks no thread: `slowSensor` |
/// | two sequences at once on one sensor | — the sensor has one delegate: one sequence at a time, by its contract | | | |
/// | a reading still being delivered as the sequence ends pauses the sensor again (no `ended` mark) | — not caught: the reading must be inside the feed's callback, before its lock, while `stop()` runs; the sensor calls nothing a test can pause there | | | |
/// | the loop leaves just after a drop-out | — | — | stopped, and still stopped a while after: `endAfterADropOutStaysStopped` (the sensor holds its queue, and any start() from another thread, until the end has stopped it, so a restart left to a task or another queue comes after the end) | — |
// One test at a time: `slowPauseIsNotOvertaken`'s sensor takes 30 ms per pause on its
// queue's thread, which its neighbours' deadlines would feel.
@Suite("4.6 Sensor feed (challenge)", .serialized)
struct SensorFeedTests {
  @Test(
    "Every reading arrives in order, and the sequence ends with the session",
    arguments: [false, true])
  func readsToTheEnd(measuresInsideStart: Bool) async throws {
    let sensor = VibrationSensor(
      runs: [.init(readings: 20, then: .finished)], measuresInsideStart: measuresInsideStart)

    let readings = try await read(sensor)

    let got = numbers(readings)
    // Only the last ones missing: they were sent, then the end overtook them.
    let tailMissing = !got.isEmpty && got.count < 20 && got == Array(1...got.count)
    #expect(
      got == Array(1...20),
      Comment(
        rawValue: tailMissing
          ? "readings the sensor sent before the end of its session never reached the loop: "
            + "#\(got.count + 1) to #20 are missing. The sensor sends the end right after its "
            + "last reading, and a finished sequence takes nothing more: each reading it sent "
            + "must be in the sequence by the time the end is"
          : "expected readings #1 to #20 in order; got \(got). "
            + (measuresInsideStart
              ? "This sensor sends its first reading inside start(): set the delegate (and "
                + "onTermination) before you call start()." : "")))
    #expect(readings.allSatisfy { $0.amplitude == VibrationSensor.amplitude(of: $0.number) })
    #expect(!sensor.isRunning)
  }

  @Test(
    "A run of 300 readings and its end, all sent inside start(): each reading arrives, in order",
    arguments: [512, 16])
  func runInsideStart(capacity: Int) async throws {
    // A data logger empties its memory inside start(): 300 readings and the end of the
    // session, one right after the other, on the thread that started it. (With a capacity
    // of 16 it is paused inside start(), and the rest come after the resume.) The loop runs
    // in a task of its own, and the test waits for it to end, so that a loop that never
    // ends is reported with what the sensor did meanwhile.
    let sensor = VibrationSensor(
      runs: [.init(readings: 300, then: .finished)], interval: .zero, sendsRunInsideStart: true)
    let log = EventLog<Int>()
    let loopEnded = Locked(false)

    let ended = try await withDeadline(
      .seconds(5), "for try await reading in vibrations(…)", hint: endHint
    ) {
      let reader = Task {
        defer { loopEnded.withLock { $0 = true } }
        for try await reading in vibrations(from: sensor, capacity: capacity) {
          log.record(reading.number)
        }
        log.close()
      }
      let ended = await eventually(within: .seconds(3)) { loopEnded.value }
      if !ended { reader.cancel() }
      return ended
    }

    let fault = log.fault(expected: Array(1...300))
    let message: String
    switch fault {
    case _ where !ended && log.received.isEmpty && !sensor.isRunning:
      message = """
        the sensor sent its 300 readings and the end of its session inside start(), and the \
        loop got none of them and never ended. This sensor sends its first reading inside \
        start(): set the delegate (and onTermination) before you call start()
        """
    case _ where !ended && sensor.isPaused:
      message = """
        the loop got \(log.received.count) of the 300 readings and never ended: \
        \(pausedForGood)
        """
    case _ where !ended:
      message = "the loop got \(log.received.count) of the 300 readings and never ended: \(endHint)"
    case nil:
      message = ""
    case .missing, .late:
      // Lost at the tail: handed over after the end. Lost before readings that arrived:
      // dropped by a buffer.
      let lastArrived = log.received.max() ?? 0
      let tailOnly = Set(1...300).subtracting(log.received).allSatisfy { $0 > lastArrived }
      message =
        !tailOnly
        ? """
        \(fault!) (#1 is the first reading): readings were lost when 300 came at once with \
        a capacity of \(capacity); a full buffer must pause the sensor, not drop readings
        """
        : """
        readings the sensor sent before the end of its session never reached the loop: \
        \(fault!) (#1 is the first reading). The sensor sends the end right after its last \
        reading, and a finished sequence takes nothing more: each reading it sent must be \
        in the sequence by the time the end is
        """
    case .unexpected, .duplicated, .outOfOrder:
      message = """
        the loop got the readings out of order: \(fault!) (#1 is the first reading). Every \
        reading must come out once, in the order the sensor sent it
        """
    }
    #expect(ended && fault == nil, Comment(rawValue: message))
    if capacity < 300 {
      #expect(
        sensor.pauses >= 1,
        """
        more than capacity readings waited unread: 300 came at once with a capacity of \
        \(capacity), and the sensor was never paused; pause() it as soon as capacity \
        readings wait
        """)
    }
    #expect(!sensor.isRunning)
  }

  @Test("A sensor that takes 2.5 seconds to end its session holds no thread while the loop waits")
  func slowSensor() async throws {
    // Longer than the watchdog's patience (1.5 s): a wait for the next reading that blocks a
    // thread (a semaphore, a dispatch group, a sleep loop), in this task or one it starts,
    // is seen and named.
    let sensor = VibrationSensor(
      runs: [.init(readings: 1, then: .finished)], interval: .milliseconds(2500),
      measuresInsideStart: true)

    let readings = try await withDeadline(
      .seconds(6), "for try await reading in vibrations(…) over a slow sensor", hint: endHint
    ) {
      var readings: [Vibration] = []
      for try await reading in vibrations(from: sensor, capacity: 4) { readings.append(reading) }
      return readings
    }

    #expect(numbers(readings) == [1])
  }

  @Test("A sensor that breaks down ends the sequence with its error, after the readings before it")
  func failure() async throws {
    let sensor = VibrationSensor(runs: [.init(readings: 5, then: .failed(SensorFault()))])
    let received = Locked<[Int]>([])

    await #expect(
      throws: SensorFault.self,
      "a failed sensor must end the sequence by throwing its error: continuation.finish(throwing: error)"
    ) {
      try await withDeadline(
        .seconds(2), "for try await reading in vibrations(…)",
        likelyCause: {
          sensor.starts > 1
            ? "the sensor failed after 5 readings, and was started again: .failed ends the "
              + "sequence by throwing its error; only .interrupted is a drop-out to restart"
            : endHint
        }
      ) {
        for try await reading in vibrations(from: sensor, capacity: 64) {
          received.withLock { $0.append(reading.number) }
        }
      }
    }
    #expect(received.value == Array(1...5))
  }

  @Test("A sensor that drops out is started again, and the readings go on")
  func restartsAfterADropOut() async throws {
    let sensor = VibrationSensor(runs: [
      .init(readings: 10, then: .interrupted), .init(readings: 10, then: .interrupted),
      .init(readings: 10, then: .finished),
    ])

    let readings = try await read(sensor, hint: restartHint)

    #expect(
      numbers(readings) == Array(1...30),
      "\(restartHint); got readings \(numbers(readings))")
    #expect(sensor.starts == 3, "\(restartHint)")
  }

  @Test("A slow reader pauses a fast sensor: nothing waits beyond capacity, and nothing is lost")
  func backPressure() async throws {
    // This sensor sends as fast as its queue runs; the reader takes its time.
    let sensor = VibrationSensor(runs: [.init(readings: 150, then: .finished)], interval: .zero)
    let capacity = 6

    let readCount = Locked(0)
    guard
      let outcome = try await readUnlessTheStartWasMissed(
        sensor, capacity: capacity, readCount: readCount,
        { () async throws -> ([Vibration], Int, Int?) in
          var readings: [Vibration] = []
          var mostAhead = 0
          var lateResume: Int?
          for try await reading in vibrations(from: sensor, capacity: capacity) {
            readings.append(reading)
            readCount.withLock { $0 = readings.count }
            // Paused first, sent second: a sensor paused again after its resume has sent at
            // least capacity readings since, so "paused with half or less waiting" means it
            // was not resumed when the reader got down to half.
            let paused = sensor.isPaused
            // Readings the sensor has sent that the reader has not read yet.
            let ahead = sensor.readingsSent - readings.count
            mostAhead = max(mostAhead, ahead)
            if paused && ahead <= capacity / 2 && lateResume == nil { lateResume = ahead }
            if readings.count.isMultiple(of: 10) { try await Task.sleep(for: .milliseconds(2)) }
            await Task.yield()
          }
          return (readings, mostAhead, lateResume)
        })
    else { return }
    let (readings, mostAhead, lateResume) = outcome

    let lost = Set(1...150).subtracting(numbers(readings)).sorted()
    // Only the first ones missing: they were sent before anything listened.
    let lostAtTheStart = !lost.isEmpty && lost == Array(1...lost.count)
    #expect(
      lost.isEmpty,
      lostAtTheStart
        ? """
        the first \(lost.count) readings were lost, and every later one arrived: this sensor \
        sends its first readings at once, as soon as it is started. Set the delegate (and \
        onTermination) before you call start()
        """
        : """
        \(lost.count) readings were lost (\(lost.prefix(5).map { "#\($0)" }.joined(separator: ", "))…): \
        a full buffer must pause the sensor, not drop readings; no buffering policy that drops \
        values will do
        """)
    #expect(numbers(readings) == numbers(readings).sorted(), "the readings came out of order")
    #expect(
      mostAhead <= capacity,
      """
      up to \(mostAhead) readings waited unread with a capacity of \(capacity): more than \
      capacity readings waited unread; pause() the sensor as soon as capacity readings wait
      """)
    #expect(sensor.pauses >= 1)
    #expect(
      lateResume == nil,
      """
      the sensor was still paused with only \(lateResume ?? 0) readings waiting (capacity \
      \(capacity)): resume it once the reader has read half of them, when no more than \
      capacity / 2 wait, not later
      """)
  }

  @Test("Readings left unread when the sensor drops out still count towards the capacity")
  func dropOutKeepsTheCount() async throws {
    // The reader takes the first reading, then reads nothing until the sensor is paused.
    // The sensor drops out after its 3rd reading, before the capacity of 4 is reached, with
    // 2 or 3 readings waiting (the first may not have been read yet); after the restart, the
    // next 1 or 2 fill the capacity.
    let sensor = VibrationSensor(
      runs: [.init(readings: 3, then: .interrupted), .init(readings: 40, then: .finished)],
      interval: .zero)
    // Read in a task of its own; a loop that never gets going or never ends is named by the
    // tests that own those causes, so this one then says nothing more.
    let reading = Task { () async throws -> (Int?, Bool, Int, [Vibration]) in
      var iterator = vibrations(from: sensor, capacity: 4).makeAsyncIterator()
      let first = try await iterator.next()
      let paused = await eventually { sensor.isPaused }
      let waiting = sensor.readingsSent - 1
      var rest: [Vibration] = []
      while let reading = try await iterator.next() { rest.append(reading) }
      return (first?.number, paused, waiting, rest)
    }
    let ended = Locked(false)
    Task {
      _ = await reading.result
      ended.withLock { $0 = true }
    }
    guard await eventually(within: .seconds(5), { ended.value }) else {
      reading.cancel()
      return
    }
    let (first, paused, waiting, rest) = try await reading.value
    #expect(first == 1, "the first reading should be #1")
    #expect(
      paused && waiting <= 4,
      Comment(
        rawValue: "\(waiting) readings waited unread with a capacity of 4"
          + (paused ? "" : ", and the sensor was never paused")
          + ": the readings left unread when the sensor dropped out still count after it "
          + "starts again, so the capacity is full sooner, and the sensor must be paused then"))
    #expect(numbers(rest) == Array(2...43), "\(restartHint); got \(numbers(rest))")
  }

  @Test("A pause that takes a while to reach the sensor is never overtaken by a resume")
  func slowPauseIsNotOvertaken() async throws {
    // Each pause() takes 30 ms before the readings stop. A feed that tells the sensor after
    // letting go of its lock lets the reader read down to half and resume() in that time:
    // the resume finds the sensor not yet paused, the pause lands after it, and the sensor
    // stays paused for good while the feed thinks it runs.
    let sensor = VibrationSensor(
      runs: [.init(readings: 120, then: .finished)], interval: .zero,
      pauseTakes: .milliseconds(30))

    let readCount = Locked(0)
    guard
      let readings = try await readUnlessTheStartWasMissed(
        sensor, capacity: 4, readCount: readCount,
        hint: "the sensor stayed paused: its pause() takes 30 ms to land, and a resume() "
          + "decided meanwhile reached it first, so the late pause held it for good; tell the "
          + "sensor to pause or resume in the same locked step that decides it",
        {
          var readings: [Vibration] = []
          for try await reading in vibrations(from: sensor, capacity: 4) {
            readings.append(reading)
            readCount.withLock { $0 = readings.count }
          }
          return readings
        })
    else { return }

    #expect(
      numbers(readings) == Array(1...120),
      """
      the loop ended after \(readings.count) of 120 readings; a pause that takes a while must \
      still be told to the sensor in the same locked step that decided it, or a resume \
      decided meanwhile reaches the sensor first, and the late pause holds it for good
      """)
  }

  @Test("A sensor that drops out while paused goes on, paused, and no reading is lost")
  func restartUnderPressure() async throws {
    let sensor = VibrationSensor(
      runs: [.init(readings: 40, then: .interrupted), .init(readings: 40, then: .finished)],
      interval: .zero)

    let readCount = Locked(0)
    guard
      let (readings, mostAhead) = try await readUnlessTheStartWasMissed(
        sensor, capacity: 4, readCount: readCount,
        { () async throws -> ([Vibration], Int) in
          var readings: [Vibration] = []
          var mostAhead = 0
          for try await reading in vibrations(from: sensor, capacity: 4) {
            readings.append(reading)
            readCount.withLock { $0 = readings.count }
            mostAhead = max(mostAhead, sensor.readingsSent - readings.count)
            if readings.count.isMultiple(of: 8) { try await Task.sleep(for: .milliseconds(2)) }
          }
          return (readings, mostAhead)
        })
    else { return }

    #expect(numbers(readings) == Array(1...80), "\(restartHint); got \(numbers(readings))")
    #expect(
      mostAhead <= 4,
      """
      up to \(mostAhead) readings waited unread with a capacity of 4, in a session that dropped \
      out: the readings waiting when the sensor drops out are still unread after it starts \
      again, and still count towards the capacity
      """)
  }

  @Test("Breaking out of the loop stops the sensor")
  func breakStops() async throws {
    let sensor = VibrationSensor(runs: [.init(readings: 100_000, then: .finished)])

    let readings = try await read(sensor, limit: 5)

    #expect(numbers(readings) == Array(1...5))
    #expect(await eventually(within: .seconds(1)) { !sensor.isRunning }, "\(stopHint)")
  }

  @Test("Cancelling the reading task stops the sensor")
  func cancelStops() async throws {
    let sensor = VibrationSensor(runs: [.init(readings: 100_000, then: .finished)])
    let reader = Task {
      var count = 0
      for try await _ in vibrations(from: sensor, capacity: 64) { count += 1 }
      return count
    }
    await eventually("the first readings to arrive") { sensor.readingsSent >= 3 }

    reader.cancel()

    _ = try await withDeadline(
      .seconds(2), "a cancelled for try await loop over vibrations(…)",
      hint: "a cancelled task must end the loop: " + stopHint
    ) {
      await reader.result
    }
    #expect(await eventually(within: .seconds(1)) { !sensor.isRunning }, "\(stopHint)")
  }

  @Test("A sequence dropped without being read stops the sensor")
  func droppedStops() async throws {
    let sensor = VibrationSensor(runs: [.init(readings: 100_000, then: .finished)])

    _ = vibrations(from: sensor, capacity: 8)

    #expect(await eventually(within: .seconds(1)) { !sensor.isRunning }, "\(stopHint)")
  }

  @Test("After one sequence has ended, a new one starts the same sensor again")
  func restartsForANewSequence() async throws {
    let sensor = VibrationSensor(runs: [.init(readings: 100_000, then: .finished)])

    let first = try await read(sensor, limit: 3)
    #expect(await eventually(within: .seconds(1)) { !sensor.isRunning }, "\(stopHint)")
    let second = try await read(sensor, limit: 3)

    #expect(first.count == 3)
    #expect(second.count == 3, "the second sequence must start the sensor again")
    #expect(sensor.starts == 2)
    #expect(await eventually(within: .seconds(1)) { !sensor.isRunning }, "\(stopHint)")
  }
}

extension SensorFeedTests {
  @Test("A sequence that ends while it holds the sensor paused leaves it free for the next")
  func restartsAfterAPausedEnd() async throws {
    // This sensor sends as fast as its queue runs: a reader that takes one and waits finds
    // it paused, and the pause survives the stop, as the sensor's documentation says.
    let sensor = VibrationSensor(runs: [.init(readings: 100_000, then: .finished)], interval: .zero)
    let capacity = 4
    let first = try await withDeadline(
      .seconds(2), "the first loop over vibrations(…)", hint: pausedForGood
    ) {
      var readings: [Vibration] = []
      for try await reading in vibrations(from: sensor, capacity: capacity) {
        readings.append(reading)
        // The queue fills up behind the first reading, and the sensor is paused.
        _ = await eventually(within: .seconds(1)) { sensor.isPaused }
        break
      }
      return readings
    }
    guard sensor.pauses > 0 else {
      // Never paused: this test has nothing to say (backPressure names that).
      return
    }
    #expect(first.count == 1)
    #expect(await eventually(within: .seconds(1)) { !sensor.isRunning }, "\(stopHint)")

    let second = try await read(
      sensor, capacity: capacity, limit: 3,
      hint: "the first sequence ended while it held the sensor paused, and a pause survives "
        + "a stop: a new sequence started the sensor, and no reading came. When a sequence "
        + "ends, resume() the sensor if it paused it")
    #expect(second.count == 3, "the second sequence must get readings")
    #expect(await eventually(within: .seconds(1)) { !sensor.isRunning }, "\(stopHint)")
  }

  @Test("A paused sensor stays paused until the reader has read half of what waits")
  func staysPausedUntilHalfIsRead() async throws {
    // This sensor sends as fast as its queue runs, so the waiting readings fill up at once.
    let sensor = VibrationSensor(runs: [.init(readings: 150, then: .finished)], interval: .zero)
    let capacity = 8

    let readings = vibrations(from: sensor, capacity: capacity)
    // Nothing is read yet: the sensor fills the queue and is paused (or, when the start was
    // missed, sends everything to no delegate and stops: `backPressure` names that).
    let settled = await eventually(within: .seconds(5)) { sensor.isPaused || !sensor.isRunning }
    guard sensor.isPaused else {
      if settled && sensor.readingsSent > capacity { return }
      // Never started by then: `startsBeforeReturning` names that.
      if settled && sensor.starts == 0 { return }
      Issue.record(
        """
        the sensor was never paused while the reader read nothing (it sent \
        \(sensor.readingsSent) readings, capacity \(capacity)): pause() it as soon as capacity \
        readings wait
        """)
      return
    }
    let waiting = sensor.readingsSent
    let pausesBefore = sensor.pauses
    let (stillPaused, pausedAgain) = try await withDeadline(
      .seconds(2), "the first next() on a full queue", hint: pausedForGood
    ) {
      var iterator = readings.makeAsyncIterator()
      // The reader takes one: far more than half of the queue still waits.
      _ = try await iterator.next()
      // Paused first, counted second: a sensor resumed and paused again since has a higher
      // count, whichever moment the pause came.
      return (sensor.isPaused, sensor.pauses > pausesBefore)
    }
    #expect(
      stillPaused && !pausedAgain,
      """
      the sensor was resumed when the reader had taken one of the \(waiting) readings \
      waiting (capacity \(capacity)): it must stay paused until the reader has read half of \
      them, with no more than capacity / 2 left; resumed at every read, the hardware is \
      paused and resumed once per reading
      """)
  }

  @Test("A sequence that ends while its pause is on the way to the sensor leaves it free")
  func restartsAfterAPauseOnItsWay() async throws {
    // Each pause() takes 300 ms to land. Nobody reads, so the feed pauses the sensor once
    // 4 readings wait; the sequence is dropped while that pause is on its way. Whether the
    // sensor is paused at that moment says nothing: the pause lands just after.
    let sensor = VibrationSensor(
      runs: [.init(readings: 100_000, then: .finished)], interval: .zero,
      pauseTakes: .milliseconds(300))
    var sequence: (any AsyncSequence<Vibration, any Error>)? = vibrations(
      from: sensor, capacity: 4)
    let pausing = await eventually(within: .seconds(1)) { sensor.isPausing }
    sequence = nil
    _ = sequence
    guard pausing else { return }  // never paused: backPressure names that
    #expect(await eventually(within: .seconds(1)) { !sensor.isRunning }, "\(stopHint)")

    let second = try await read(
      sensor, capacity: 4, limit: 3,
      hint: "the first sequence ended while its pause was on the way to the sensor: the sensor "
        + "was not paused yet when the sequence ended, and the pause landed after. A new "
        + "sequence started the sensor, and no reading came. Whether to lift a pause is this "
        + "feed's own knowledge (it asked for one), not the sensor's state at that moment")
    #expect(second.count == 3, "the second sequence must get readings")
  }

  @Test("vibrations(from:capacity:) starts the sensor itself, before it returns")
  func startsBeforeReturning() async throws {
    // A short session, so that a sensor started late, and never stopped, ends by itself.
    let sensor = VibrationSensor(runs: [.init(readings: 50, then: .finished)])

    // Nothing between the call and the look at the sensor: a task started by the call, or a
    // loop that begins later, has not had its turn on this thread.
    var sequence: (any AsyncSequence<Vibration, any Error>)? = vibrations(
      from: sensor, capacity: 8)
    let (starts, here) = (sensor.starts, sensor.wasStartedOnThisThread)
    sequence = nil
    _ = sequence

    #expect(
      starts == 1 && here,
      Comment(
        rawValue: starts == 0
          ? "vibrations(from:capacity:) returned, and the sensor had not been started: the "
            + "call promises every reading from now on, so it starts the sensor itself, "
            + "before it returns. Started later, by a task or only once a loop asks for its "
            + "first reading, the readings of the meantime are never measured, and a sequence "
            + "dropped unread never starts (or stops) the sensor as promised"
          : starts > 1
            ? "vibrations(from:capacity:) started the sensor \(starts) times before it "
              + "returned: one sequence, one start"
            : "the sensor was started on another thread: vibrations(from:capacity:) must "
              + "start the sensor itself, before it returns; a task (or a queue) it hands the "
              + "start to runs whenever it gets its turn, before or after the call returns. A "
              + "sequence dropped or cancelled before then has ended before its onTermination "
              + "was set, and the sensor is started afterwards with nobody to stop it"))
    _ = await eventually(within: .seconds(1)) { !sensor.isRunning }
  }
}

extension SensorFeedTests {
  @Test("A sensor that measures inside start() is started again after a drop-out, and goes on")
  func restartThatMeasuresAtOnce() async throws {
    // This sensor has a reading ready whenever it is started, and sends it inside start(), on
    // the thread that called it, before start() returns. After a drop-out, that thread is
    // the one running the feed's didStop.
    let sensor = VibrationSensor(
      runs: [
        .init(readings: 5, then: .interrupted), .init(readings: 5, then: .interrupted),
        .init(readings: 5, then: .finished),
      ],
      measuresInsideStart: true)

    let readings = try await withDeadline(
      .seconds(2), "for try await reading in vibrations(…)",
      likelyCause: {
        sensor.starts > 1
          ? "the sensor dropped out, was started again, and the loop got no reading after "
            + "that: this sensor sends a reading inside start(), on the thread that called it, "
            + "and the delegate's didMeasure runs before start() returns. Code that holds a "
            + "lock while it calls start() meets that same lock again in didMeasure, on the "
            + "same thread, and waits for itself for good"
          : restartHint
      }
    ) {
      var readings: [Vibration] = []
      for try await reading in vibrations(from: sensor, capacity: 64) { readings.append(reading) }
      return readings
    }

    #expect(
      numbers(readings) == Array(1...15),
      "\(restartHint); got readings \(numbers(readings))")
  }

  @Test("A sequence that ends just after the sensor dropped out leaves it stopped for good")
  func endAfterADropOutStaysStopped() async throws {
    // The sensor drops out after 5 readings, and the loop leaves as soon as the feed has been
    // told. Meanwhile the sensor's queue waits (at most 2 s) until the sequence has stopped
    // it, and a start() from any other thread waits with it: a restart the drop-out left to
    // a task or another queue reaches the sensor after the end, as it may on any machine.
    let droppedOut = Locked(false)
    let dropOutOver = Locked(false)
    let sensor = VibrationSensor(
      runs: [.init(readings: 5, then: .interrupted), .init(readings: 100_000, then: .finished)],
      afterDropOut: { sensor in
        droppedOut.withLock { $0 = true }
        let giveUp = ContinuousClock.now + .seconds(2)
        while sensor.stops == 0 && ContinuousClock.now < giveUp {
          Thread.sleep(forTimeInterval: 0.001)
        }
        dropOutOver.withLock { $0 = true }
      })
    // Whatever this answer left running, it does not measure for the rest of the run.
    defer { sensor.stop() }

    let readings = try await withDeadline(
      .seconds(2), "for try await reading in vibrations(…)", hint: restartHint
    ) {
      var readings: [Vibration] = []
      for try await reading in vibrations(from: sensor, capacity: 64) {
        readings.append(reading)
        guard readings.count == 5 else { continue }
        // The last reading before the drop-out: leave as soon as the feed has heard of it.
        _ = await eventually(within: .seconds(2)) { droppedOut.value }
        break
      }
      return readings
    }
    #expect(
      numbers(readings) == Array(1...5), "expected readings #1 to #5; got \(numbers(readings))")
    guard droppedOut.value else { return }  // never dropped out: `restartsAfterADropOut` names that
    guard await eventually(within: .seconds(3), { dropOutOver.value }), sensor.stops > 0 else {
      Issue.record("\(stopHint)")
      return
    }

    // A restart still on its way gets its turn.
    let runsAgain = await eventually(within: .milliseconds(500)) { sensor.isRunning }
    #expect(
      !runsAgain,
      """
      the sensor was running again after the sequence had ended: it dropped out just before \
      the loop left, and its restart came after the end had stopped it. A restart that runs \
      later than the drop-out's didStop (in a task, or a block on another queue) can come \
      after the sequence has ended, whenever it gets its turn; the sensor then measures for \
      nobody, and a new sequence's start() finds it running and does nothing
      """)
  }
}
