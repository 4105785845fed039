import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import Streams

private let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(100))]

let levelsHint =
  "the observer must be added to battery.notificationCenter (not .default) for "
  + "Battery.levelDidChangeNotification, and its block must yield battery.level"

let queueHint =
  "battery.level was read on another thread than the one that posted, after post had "
  + "returned, when the level may have changed again: it must be read inside post, in the "
  + "observer block itself. Was the observer given a queue (the center then runs the block "
  + "later; add it with queue: nil), or does the block read the level in a Task it starts?"

/// What most likely keeps a loop that wants `wanted` levels waiting, judged at the deadline
/// from what the battery saw and the loop got (`seen`).
func diagnosis(of battery: Battery, seen: [Int], wanted: Int) -> String {
  let posts = battery.postCount
  let reads = battery.levelReadCount
  if posts > 0, reads == 0 {
    // Is the observer in the default center? Post there too, and see whether a block reads.
    NotificationCenter.default.post(name: Battery.levelDidChangeNotification, object: battery)
    if battery.levelReadCount > 0 {
      return
        "your observer listens to NotificationCenter.default, where this battery never posts: "
        + levelsHint
    }
    // An observer there now runs inside this post: then it was added after the changes.
    battery.notificationCenter.post(name: Battery.levelDidChangeNotification, object: battery)
    if battery.levelReadCount > 0 {
      return
        "\(posts) changes were posted to battery.notificationCenter before your observer was "
        + "there: it was added later than levelChanges(of:) returned (in a Task it started, "
        + "say), so the changes made right after were lost; add the observer before the "
        + "stream is returned"
    }
    return
      "\(posts) changes were posted to battery.notificationCenter and no observer block ran: "
      + "observe Battery.levelDidChangeNotification there with queue: nil (a block given a "
      + "queue runs later, if ever), and yield battery.level from the block"
  }
  if seen.count < wanted, reads >= wanted {
    return
      "\(reads) changes reached your observer block, but the loop got only \(seen): the stream "
      + "threw away levels nobody had read yet. Keep every one: the default buffering policy, "
      + ".unbounded, does"
  }
  return levelsHint
}

/// A battery with a notification center of its own, so that no other test can post to it.
private func makeBattery(script: CallbackScript = .synchronously) -> Battery {
  Battery(level: 80, notificationCenter: NotificationCenter(), script: script)
}

/// Makes a stream of `battery`'s level changes, runs `changes`, then iterates the stream until
/// it has `count` levels and breaks out of the loop. The stream is released when this returns,
/// as in `for await level in levelChanges(of: battery) { … }`.
private func first(
  _ count: Int, of battery: Battery, after changes: @escaping @Sendable () -> Void,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [Int] {
  let levels = try await read(
    count, from: levelChanges(of: battery), of: battery, after: changes,
    sourceLocation: sourceLocation)
  // A read before anything was posted is the level as it was, which the test of the
  // levels themselves names; only later reads outside a post are this mistake. (Not next to
  // the expectation: Swift Testing would show a comment there as the failure's message.)
  let readsOutsidePosts =
    battery.levelReadsOutsidePostsCount - battery.levelReadsBeforeAnyPostCount
  #expect(readsOutsidePosts == 0, Comment(rawValue: queueHint), sourceLocation: sourceLocation)
  return levels
}

/// The first `count` levels of `stream`, read within the deadline; `changes` runs first.
/// `silenced` is the verdict when the loop stopped exactly where another stream ended.
private func read(
  _ count: Int, from stream: AsyncStream<Int>, of battery: Battery,
  silenced: String? = nil, after changes: @Sendable () -> Void,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [Int] {
  changes()
  let progress = Locked<[Int]>([])
  // Handed to the loop, not captured by it: the deadline may keep its closure a while after
  // the loop ends, and the stream must end (and remove its observer) when the loop does.
  let handOver = Locked<AsyncStream<Int>?>(stream)
  return try await withDeadline(
    .seconds(2), "the loop over levelChanges(of:)",
    diagnosis: {
      if let silenced, progress.value == [5, 4] { return silenced }
      return diagnosis(of: battery, seen: progress.value, wanted: count)
    },
    sourceLocation: sourceLocation
  ) {
    guard let stream = handOver.withLock({ $0.take() }) else { return [] }
    var seen: [Int] = []
    for await level in stream {
      seen.append(level)
      progress.withLock { $0.append(level) }
      if seen.count == count { break }
    }
    return seen
  }
}

/// Changes the battery's level after a stream has ended, and says how many observer blocks
/// still read the level (0 when every observer has been removed).
private func readsAfterTheEnd(of battery: Battery) async -> Int {
  let reads = battery.levelReadCount
  let posts = battery.postCount
  battery.simulateChanges(to: [50, 49])
  // Wait until both changes have been posted: the battery posts on its own queue unless its
  // script is synchronous.
  _ = await eventually { battery.postCount == posts + 2 }
  return battery.levelReadCount - reads
}

/// The contract of `levelChanges(of:)`: each path, what the loop and the center see, and
/// the test that checks it (— where a column does not apply, and why). Tests whose name is
/// in the stress file are in `02-NotificationsStressTests.swift`.
///
/// | path | levels (count, order) | end | observer | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | changes posted, the loop breaks | each new level, in order: `yieldsEachLevel`; through 0 and up again: `flatAndChargedAgain` | — notifications never end: the loop ends the stream | removed: `removesTheObserverWhenTheLoopBreaks` | inside `post`, on the battery's queue, later; the level read in the block that was posted: `yieldsEachLevel` |
/// | a level yielded later, by a task or a queue | the loop is woken from inside the post, so no level can overtake another: `levelsArePassedOnInThePost` | — | — | — |
/// | 3,000 changes, microseconds apart | all, once each, in order: `everyLevelInOrder` | — | — | from one thread of their own: `everyLevelInOrder` |
/// | changes from many threads at once | each exactly once: `postsFromManyThreads` | — | — | four posting threads: `postsFromManyThreads` |
/// | the task is cancelled, before or after a change | — | the loop ends: `removesTheObserverWhenTheTaskIsCancelled` | removed: `removesTheObserverWhenTheTaskIsCancelled` | in a storm of posts from other threads: `endsDuringAStorm` |
/// | the stream is dropped unread | — | — | removed: `removesTheObserverWhenTheStreamIsDropped` | — |
/// | another battery changes | none of its levels, and this battery's level not read for it: `listensToItsOwnBatteryOnly` | — | — | — |
/// | the stream made on an operation queue (as on the main queue) | each level: `madeOnAnOperationQueue` | — | — | still read inside the post, not on that queue: `madeOnAnOperationQueue` |
/// | two streams at once, one ends (the first made or the last) | the other gets every change: `streamsAreIndependent` | — | the other's stays, and none is left once both end: `streamsAreIndependent` | — |
/// | the observer only switched off (a flag), never removed | — | — | the battery is let go once the loop ended and the test dropped it (the center no longer holds the block): `letsTheBatteryGoAfterTheEnd` | — |
/// | a failure | — a notification cannot fail | | | |
@Suite("4.2 Notifications")
struct NotificationsTests {
  @Test("Yields the new level after each change, in order", arguments: scripts)
  func yieldsEachLevel(script: CallbackScript) async throws {
    let battery = makeBattery(script: script)

    let levels = try await first(3, of: battery) {
      battery.simulateChanges(to: [79, 78, 77])
    }

    #expect(
      levels == [79, 78, 77],
      because(
        levels.first == 80
          ? "the loop's first level was 80, the charge before any change: the stream yields "
            + "each change from now on, not the level the battery had when the loop started"
          : !levels.isEmpty && levels.count < 3
            && Array([79, 78, 77].prefix(levels.count)) == levels
            ? "the battery changed to 79, 78, 77, and the loop got \(levels), then the stream "
              + "ended: notifications never end by themselves, so the stream ends only when its "
              + "loop does"
            : "the battery changed to 79, 78, 77; the loop should get each new level once, "
              + "in that order"))
  }

  @Test("A battery that runs flat and is charged again: every level, 0 included")
  func flatAndChargedAgain() async throws {
    let battery = makeBattery(script: .synchronously)

    let levels = try await first(3, of: battery) {
      battery.simulateChanges(to: [0, 1, 2])
    }

    #expect(
      levels == [0, 1, 2],
      because(
        "the battery ran flat (0), then charged to 1 and 2, and the loop got \(levels): a level "
          + "of 0 is a change like any other, not the end of the stream (a phone is plugged in); "
          + "notifications never end by themselves, so the stream ends only when its loop does"))
  }

  @Test(
    "Removes its observer when the loop breaks: later changes reach no block", arguments: scripts)
  func removesTheObserverWhenTheLoopBreaks(script: CallbackScript) async throws {
    let battery = makeBattery(script: script)

    let levels = try await first(2, of: battery) {
      battery.simulateChanges(to: [70, 69])
    }
    let stray = await readsAfterTheEnd(of: battery)

    #expect(levels == [70, 69])
    #expect(
      stray == 0,
      because(
        "after the loop ended, \(stray) changes still reached an observer block: remove the "
          + "observer in the continuation's onTermination, however the stream ends (a break "
          + "ends it as .cancelled, not .finished)"))
  }

  @Test(
    "Removes its observer when the task iterating is cancelled, before or after a change",
    arguments: [0, 1])
  func removesTheObserverWhenTheTaskIsCancelled(changesBefore: Int) async throws {
    let battery = makeBattery()
    let changes = levelChanges(of: battery)
    let received = Locked(0)
    let task = Task {
      for await _ in changes {
        received.withLock { $0 += 1 }
      }
    }
    defer { task.cancel() }

    if changesBefore > 0 {
      battery.simulateChanges(to: [60])
      let arrived = await eventually { received.value == 1 }
      try #require(arrived, Comment(rawValue: levelsHint))
    }
    task.cancel()
    try await withDeadline(
      .seconds(2), "the cancelled loop over levelChanges(of:)",
      hint: "a cancelled loop over an AsyncStream ends by itself; is the observer block blocking?"
    ) {
      await task.value
    }
    let stray = await readsAfterTheEnd(of: battery)

    #expect(
      stray == 0,
      because(
        "after the task was cancelled, \(stray) changes still reached an observer block: "
          + "remove the observer in the continuation's onTermination, however the stream "
          + "ends (a break, a cancelled task and a dropped stream end it as .cancelled, not "
          + ".finished)"))
  }

  @Test("Removes its observer when the stream is dropped without being iterated")
  func removesTheObserverWhenTheStreamIsDropped() async throws {
    let battery = makeBattery()
    do {
      // Made and let go at once, as a screen that closes before its loop starts does.
      _ = levelChanges(of: battery)
    }

    let stray = await readsAfterTheEnd(of: battery)

    #expect(
      stray == 0,
      because(
        "a stream nobody iterates was dropped, and \(stray) later changes still reached an "
          + "observer block: the center keeps the block, and the battery, for as long as it "
          + "lives. Dropping a stream ends it too: remove the observer in the continuation's "
          + "onTermination"))
  }

  @Test("Listens to its own battery only")
  func listensToItsOwnBatteryOnly() async throws {
    let center = NotificationCenter()
    let battery = Battery(level: 80, notificationCenter: center, script: .synchronously)
    let other = Battery(level: 30, notificationCenter: center, script: .synchronously)

    let levels = try await first(1, of: battery) {
      other.simulateChanges(to: [29, 28])
      center.post(name: Notification.Name("LegacyKit.Battery.stateDidChange"), object: battery)
      battery.simulateChanges(to: [79])
    }

    #expect(
      levels == [79],
      because(
        "the first value must be this battery's change: observe its notification only "
          + "(object: battery)"))
    let reads = battery.levelReadCount
    #expect(
      reads == 1,
      because(
        "this battery changed once, and its level was read \(reads) times: the stream's block "
          + "also ran for the other battery's changes, or for another notification, and read "
          + "this battery's level there; every post in the app then costs this stream a read. "
          + "Hear only this battery's level changes"))
  }

  @Test(
    "A stream made on an operation queue, as app code on the main queue is, reads inside the post")
  func madeOnAnOperationQueue() async throws {
    // In an app, code that makes the stream often runs on the main queue, an operation
    // queue; the battery posts on a queue of its own. An observer that takes its queue from
    // where it was added runs there, later than the post (or while the post waits for it).
    let battery = makeBattery(script: .default)
    let appQueue = OperationQueue()
    appQueue.maxConcurrentOperationCount = 1
    let stream = await withCheckedContinuation { made in
      appQueue.addOperation { made.resume(returning: levelChanges(of: battery)) }
    }

    let levels = try await read(3, from: stream, of: battery) {
      battery.simulateChanges(to: [5, 4, 3])
    }

    #expect(levels == [5, 4, 3])
    let readsOutsidePosts =
      battery.levelReadsOutsidePostsCount - battery.levelReadsBeforeAnyPostCount
    #expect(readsOutsidePosts == 0, Comment(rawValue: queueHint))
  }

  @Test(
    "Each stream gets every change, and ending one leaves the other listening",
    arguments: [true, false])
  func streamsAreIndependent(madeFirstEndsFirst: Bool) async throws {
    let battery = makeBattery()
    var streams = [levelChanges(of: battery), levelChanges(of: battery)]
    // Held only here, so that dropping it after the loop ends it, as a loop's own would.
    var ending: AsyncStream<Int>? = streams.remove(at: madeFirstEndsFirst ? 0 : 1)
    var staying: AsyncStream<Int>? = streams[0]
    streams = []
    let which = madeFirstEndsFirst ? "the stream made first" : "the stream made last"
    let notItsOwn =
      "the ending stream removed an observer that was not its own. Each stream removes the "
      + "one token it added; one battery may have many listeners, so a token kept per battery "
      + "(or anywhere shared) is overwritten by the next stream's"

    let fromOne = try await read(2, from: ending!, of: battery) {
      battery.simulateChanges(to: [5, 4])
    }
    ending = nil
    let reads = battery.levelReadCount
    // The block runs inside post(), so its read is counted before this returns.
    battery.simulateChanges(to: [3])
    let readsAfterOneEnded = battery.levelReadCount - reads
    #expect(fromOne == [5, 4])
    guard readsAfterOneEnded == 1 else {
      Issue.record(
        Comment(
          rawValue: readsAfterOneEnded == 0
            ? "two streams listened to one battery, and when \(which) ended, the other's "
              + "observer stopped hearing changes too: \(notItsOwn)"
            : "after \(which) ended, one change reached \(readsAfterOneEnded) observer "
              + "blocks, where only the other stream's should run: the ending stream's "
              + "observer was not removed"))
      return
    }
    let fromOther = try await read(
      3, from: staying!, of: battery,
      silenced: "the other stream got 5 and 4, and nothing after \(which) ended: \(notItsOwn)"
    ) {}
    staying = nil
    #expect(fromOther == [5, 4, 3], "ending one stream must not end the other")

    let readsWhenBothEnded = battery.levelReadCount
    battery.simulateChanges(to: [2])
    #expect(
      battery.levelReadCount == readsWhenBothEnded,
      Comment(
        rawValue: "after both streams ended, a change still ran an observer block: each "
          + "stream must remove the observer it added, however many streams listen to the "
          + "battery"))
  }

  @Test("Each level reaches the waiting loop from inside the post that announced it")
  func levelsArePassedOnInThePost() async throws {
    // Levels handed to tasks or to a queue come out of order only when the machine happens
    // to run them so; where the waiting loop is woken from is certain: by whoever yields the
    // level. Yielded in the observer block, inside the post, a level is in the stream before
    // the next change can be posted, so none can overtake it.
    var elsewhere = 0
    var woken = 0
    for _ in 1...3 where woken == 0 {
      let battery = makeBattery()
      let handOver = Locked<AsyncStream<Int>?>(levelChanges(of: battery))
      let wakes = WakeWatch { Battery.isPostingOnThisThread }
      try await withDeadline(
        .seconds(2), "the loop over levelChanges(of:)",
        likelyCause: { diagnosis(of: battery, seen: [], wanted: 10) }
      ) {
        // Only a level (or the end of the stream) hands the waiting loop back to the watch.
        await wakes.counting {
          guard let stream = handOver.withLock({ $0.take() }) else { return }
          Thread {
            for level in 1...10 {
              battery.simulateChanges(to: [level])
              usleep(2_000)
            }
          }.start()
          var count = 0
          for await _ in stream {
            count += 1
            if count == 10 { break }
          }
        }
      }
      elsewhere += wakes.fromElsewhere
      woken += wakes.fromInside + wakes.fromElsewhere
    }

    #expect(
      elsewhere == 0,
      because(
        "of the \(woken) times a level woke the waiting loop, \(elsewhere) came from outside "
          + "the post that announced it: the level was yielded later, by a task or a queue the "
          + "observer block handed it to, and levels passed on later may reach the loop in any "
          + "order, an old level after a newer one. Yield each level in the observer block "
          + "itself, before post returns: work handed to a task of its own may run in any order"
      ))
  }

  @Test("Once the loop has ended, nothing of the stream keeps the battery alive")
  func letsTheBatteryGoAfterTheEnd() async throws {
    weak var weakBattery: Battery?
    do {
      let battery = makeBattery()
      weakBattery = battery
      _ = try await first(2, of: battery) { battery.simulateChanges(to: [79, 78]) }
    }
    // The battery holds its center; a block still registered there holds the battery.
    let released = await eventually(within: .milliseconds(500)) { weakBattery == nil }

    #expect(
      released,
      because(
        "the loop ended and the test let go of the battery, but it is still alive: its center "
          + "still holds the observer block, which holds the battery (and the continuation) "
          + "and runs on every change, for as long as the center lives. A block that merely "
          + "stops passing levels on is still registered: the stream's end must remove the "
          + "observer from the center"))
  }
}
