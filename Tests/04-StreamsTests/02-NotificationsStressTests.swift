import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import Streams

/// Posts one level change to `battery`'s own center on this thread, as the battery would.
private func post(_ battery: Battery) {
  battery.notificationCenter.post(name: Battery.levelDidChangeNotification, object: battery)
}

extension NotificationsTests {
  @Test("Changes posted from many threads at once each reach the stream exactly once")
  func postsFromManyThreads() async throws {
    let battery = Battery(level: 80, notificationCenter: NotificationCenter())
    let posters = 4
    let perPoster = 250
    let received = Locked(0)
    let stream = levelChanges(of: battery)
    // Nothing has changed yet: a level read now is the charge before any change.
    let readAtStart = battery.levelReadCount
    let loopEnded = Locked(false)
    let consumer = Task {
      for await _ in stream { received.withLock { $0 += 1 } }
      loopEnded.withLock { $0 = true }
    }
    defer { consumer.cancel() }

    let posted = Countdown(posters)
    for _ in 0..<posters {
      Thread {
        for index in 0..<perPoster {
          post(battery)
          if index % 50 == 0 { usleep(UInt32.random(in: 0...100)) }
        }
        posted.arrive()
      }.start()
    }
    try await withDeadline(
      .seconds(5), "\(posters) threads posting \(perPoster) changes each",
      hint: "the observer block must only yield; it must not wait for anything"
    ) {
      await posted.reached()
    }
    let all = posters * perPoster
    let arrived = await eventually { received.value >= all }
    // A moment more, so a change yielded twice would show.
    try await Task.sleep(for: .milliseconds(50))

    #expect(
      arrived && received.value == all,
      because(
        readAtStart > 0 && received.value == all + readAtStart
          ? "the stream yielded \(received.value) levels for \(all) changes: the extra one is "
            + "the charge before any change, read when the stream began; the stream yields "
            + "each change from now on, not the level the battery had when the loop started"
          : "\(all) changes were posted from \(posters) threads, and the stream yielded "
            + "\(received.value) levels: each notification must yield exactly once"
            + (received.value < all && loopEnded.value
              ? "; and then the stream ended, though notifications never end by themselves: "
                + "nothing but the listener leaving ends it"
              : received.value < all && battery.levelReadCount - readAtStart >= all
                ? "; your observer block ran and read the level for every one of them, and "
                  + "not every read was yielded: each post is news, even of the level the "
                  + "battery had before"
                : "")))
  }

  @Test(
    "Ending the stream in the middle of a storm of changes from other threads removes the observer")
  func endsDuringAStorm() async throws {
    let battery = Battery(level: 80, notificationCenter: NotificationCenter())
    var leftObserving: [Int] = []
    var yieldedAtAll = false

    for round in 1...20 {
      let received = Locked(0)
      let stream = levelChanges(of: battery)
      let consumer = Task {
        for await _ in stream { received.withLock { $0 += 1 } }
      }
      let posted = Countdown(2)
      for _ in 0..<2 {
        Thread {
          for _ in 0..<100 {
            post(battery)
            usleep(UInt32.random(in: 0...20))
          }
          posted.arrive()
        }.start()
      }
      // A callback on yet another thread cancels the loop, at any moment of the storm.
      onRandomThread(within: .milliseconds(1)) { consumer.cancel() }

      try await withDeadline(
        .seconds(2), "the cancelled loop over levelChanges(of:), round \(round)",
        hint: "a cancelled loop over an AsyncStream ends by itself; is a yield blocking?"
      ) {
        await consumer.value
        await posted.reached()
      }
      if received.value > 0 { yieldedAtAll = true }
      // The stream has ended: a change posted now must not reach any observer block.
      let removed = await eventually {
        let reads = battery.levelReadCount
        post(battery)
        return battery.levelReadCount == reads
      }
      if !removed { leftObserving.append(round) }
      if leftObserving.count >= 3 { break }
    }

    #expect(yieldedAtAll, "no stream yielded anything while changes were posted")
    #expect(
      leftObserving.isEmpty,
      because(
        "after the stream ended in rounds \(leftObserving), its observer still ran for each "
          + "change: remove the observer in the continuation's onTermination, however the stream "
          + "ends (a break, a cancelled task and a dropped stream end it as .cancelled, not "
          + ".finished)"))
  }
}

extension NotificationsTests {
  @Test("3,000 changes posted from one thread, microseconds apart: every level once, in order")
  func everyLevelInOrder() async throws {
    let levels = Array(1...3_000)
    let loopThread = OneThreadExecutor()
    var problems: [String] = []

    // Gaps of a few microseconds between posts: the spacing at which work handed from each
    // post to a task of its own gets run by two threads of the pool at once.
    let gaps = [5_000, 10_000, 20_000, 2_000]
    let rounds = stressAmount(grading: 4, verify: 16)
    for (round, gap) in (0..<rounds).map({ ($0, gaps[$0 % gaps.count]) }) {
      let battery = Battery(
        level: 0, notificationCenter: NotificationCenter(), script: .synchronously)
      let stream = levelChanges(of: battery)
      let poster = Thread {
        for level in levels {
          battery.simulateChanges(to: [level])
          let start = DispatchTime.now().uptimeNanoseconds
          while DispatchTime.now().uptimeNanoseconds - start < UInt64(gap) {}
        }
      }
      poster.start()
      // The loop on a thread of its own, and the pool left whole (no pool check): work
      // handed to tasks gets both of its threads, as in an app.
      let progress = Locked<[Int]>([])
      let seen = try await withDeadline(
        .seconds(5), "a loop over 3,000 level changes",
        likelyCause: {
          // What the battery saw names the cause when it can (a block never run, run on a
          // queue, levels thrown away); otherwise a yield was lost.
          let cause = diagnosis(of: battery, seen: progress.value, wanted: levels.count)
          if cause != levelsHint { return cause }
          if battery.levelReadsOutsidePostsCount > 0 { return queueHint }
          let (posts, reads) = (battery.postCount, battery.levelReadCount)
          if reads < posts {
            return "\(posts - reads) of the \(posts) changes ran no observer block: the "
              + "observer was not there yet (added later than levelChanges(of:) returned, in "
              + "a Task it started, say) or no longer there; add it before the stream is "
              + "returned, and remove it only when the stream ends"
          }
          return "the observer block must yield battery.level for every change; is a yield lost?"
        },
        on: loopThread, checksPool: false
      ) {
        var seen: [Int] = []
        for await level in stream {
          seen.append(level)
          progress.withLock { $0.append(level) }
          if seen.count == levels.count { break }
        }
        return seen
      }
      if seen != levels {
        let wrong = zip(seen, levels).first { $0 != $1 }
        problems.append(
          "round \(round + 1): the loop got the levels out of the order they were posted"
            + (wrong.map { " (\($0.0) where \($0.1) was due)" } ?? ""))
        break
      }
    }

    #expect(
      problems.isEmpty,
      because(
        "the stream promises every level the battery posts, oldest first: "
          + "\(problems.joined(separator: "; ")). A battery gauge fed by this stream could end "
          + "on a stale level. Pass each level on before the observer block returns: work "
          + "handed to a task of its own may run in any order"))
  }
}
