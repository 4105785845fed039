import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import Structured

private let hint =
  "the actor's job never ran: enqueue(_:) must run every job on the queue with "
  + "runSynchronously(on:)"

/// Claims `store`'s isolation from whatever thread calls it, as synchronous code does.
private func assumeIsolatedHere(_ store: NoteStore) {
  store.assumeIsolated { _ in }
}

private func offQueueMessage(_ context: RecordContext) -> Comment {
  let (all, reads) = (context.offQueueAccesses, context.offQueueReads)
  guard reads == all else {
    // Inserts strayed too: the actor's own jobs ran elsewhere.
    return """
      the records were touched \(all) time(s) off the context's queue, \(all - reads) of them \
      inserts: the actor needs a custom executor that runs its jobs on context.queue \
      (unownedExecutor), the queue of this store's own context (an executor shared between \
      stores, or kept from another context, runs them on that context's queue)
      """
  }
  return """
    the records were read \(reads) time(s) off the context's queue, while every insert ran on \
    it: the actor's jobs run there, but a method marked nonisolated, or work handed to a task \
    or queue of its own, reads them on another thread
    """
}

/// The contract of `NoteStore`: each path, what the callers and the record context see, and
/// the test that checks it (— where a column does not apply, and why).
///
/// | path | result | records (where touched, order) | thread, timing |
/// | --- | --- | --- | --- |
/// | adds, then reads | the count after each, the titles: `touchesRecordsOnTheQueue` | only on the context's queue: `touchesRecordsOnTheQueue` | — |
/// | mixed with `perform` blocks | the blocks' notes too, in the titles and in the count `add(_:)` returns: `sharesTheQueueInOrder` | one queue, in the order submitted: `sharesTheQueueInOrder` | — |
/// | many callers and blocks at once | no note lost; each add returns the count just after its own insert: `concurrentCallers` | — | — |
/// | two stores on two contexts | — | each on its own queue: `twoContexts` | — |
/// | a `perform` block busy for 2.5 s | — | — | no thread of the pool blocked while `add(_:)` and `titles()` wait their turn: `waitsWithoutBlocking` |
/// | `assumeIsolated` in a `perform` block | — optional (the hints' `checkIsolated`): an actor that hops with `perform` in each method is right too | | |
/// | `assumeIsolated` off the context's queue | — | — | stops the program, whether the executor checks (`checkIsolated`) or the actor has the default one: `assumeIsolatedOffTheQueueTraps` |
/// | failure, cancellation | — the methods neither throw nor wait on anything cancellable | | |
/// | the app lets go of the store and its context | — | the store, its executor and the context's queue are released: `releasedWithTheStore` | — |
/// | calls between `perform` blocks | each count and title list read from the context at that call, the blocks' notes included: `readsTheRecordsOnEveryCall` | — | — |
/// | the same title added again | one more note every time, the count up by one: `addsTheSameTitleAgain` | — | — |
/// | a job enqueued while a block and an earlier job wait on the queue | — | after every perform block submitted before it (a drain block gathering jobs or a queue of the executor's own targeting the context's lets it overtake): `laterJobsFollowEarlierBlocks` | — |
/// | `enqueue` called on the context's queue | — | — not caught: a job run at once there overtakes the blocks before it, but calling the actor from a perform block would crash the answers that wait with `queue.sync` instead of grading them | — |
/// | each job hopped through a global queue before `queue.async` | — | — not caught: the job reaches the queue after a delay nobody controls, so a perform block submitted after it overtakes it only on some runs, and holding the global queue would hold the pool | — |
@Suite("7.2 A perform-style scheduler")
struct PerformQueueTests {
  @Test("Adds and reads notes on the context's queue, and only there")
  func touchesRecordsOnTheQueue() async throws {
    let context = RecordContext()
    let store = NoteStore(context: context)

    let (counts, titles) = try await withDeadline(.seconds(2), "add(_:) and titles()", hint: hint) {
      var counts: [Int] = []
      for title in ["milk", "eggs", "bread"] { counts.append(await store.add(title)) }
      return (counts, await store.titles())
    }

    #expect(
      counts == [1, 2, 3],
      Comment(
        rawValue: counts == [0, 1, 2]
          ? "add(_:) returned \(counts) for three notes: each time, the number of records before "
            + "its own note was in, so the count was read before the insert had happened (an "
            + "insert handed to perform, or to a task of its own, runs after add(_:) returned)"
          : "add(_:) of three notes to an empty context returned \(counts): each returns how many "
            + "records the context holds once its note is in"))
    #expect(titles == ["milk", "eggs", "bread"])
    #expect(context.offQueueAccesses == 0, offQueueMessage(context))
  }

  @Test("perform blocks and the actor's methods run on one queue, in the order submitted")
  func sharesTheQueueInOrder() async throws {
    let context = RecordContext()
    let store = NoteStore(context: context)

    let (count, titles) = try await withDeadline(
      .seconds(2), "add(_:) and titles()", hint: hint
    ) {
      context.perform { context.insert("from perform 1") }
      let count = await store.add("from the actor")
      context.perform { context.insert("from perform 2") }
      // Queued after the second block on the same serial queue, so it must see it.
      return (count, await store.titles())
    }

    #expect(titles == ["from perform 1", "from the actor", "from perform 2"])
    #expect(
      count == 2,
      Comment(
        rawValue: "add(_:) returned \(count) after a perform block had inserted a note and the "
          + "actor one more: the count is of the context's records, whoever inserted them (the "
          + "app's old code still inserts through perform), not of the actor's own adds"))
    #expect(context.offQueueAccesses == 0, offQueueMessage(context))
  }

  @Test("Many callers and perform blocks at once lose no note")
  func concurrentCallers() async throws {
    let context = RecordContext()
    let store = NoteStore(context: context)

    let (counts, titles) = try await withDeadline(.seconds(2), "100 add(_:) calls", hint: hint) {
      let counts = await withTaskGroup(of: (String, Int).self) { group in
        for index in 0..<50 {
          group.addTask { ("task \(index)", await store.add("task \(index)")) }
          context.perform { context.insert("block \(index)") }
        }
        var counts: [String: Int] = [:]
        for await (title, count) in group { counts[title] = count }
        return counts
      }
      // After every add; a final block on the queue flushes the remaining perform blocks.
      await withCheckedContinuation { done in context.perform { done.resume() } }
      return (counts, await store.titles())
    }

    #expect(titles.count == 100)
    #expect(Set(titles).count == 100)
    // The count add(_:) returns is of the records just after its own insert: its note is
    // the last of them. Reading the count and inserting in two steps, with a suspension
    // between, lets other adds and perform blocks in between.
    let wrong = counts.filter { title, count in
      !titles.indices.contains(count - 1) || titles[count - 1] != title
    }
    let eachCountIsItsOwn = wrong.isEmpty
    #expect(
      eachCountIsItsOwn,
      Comment(
        rawValue: "\(wrong.count) of 50 concurrent add(_:) calls returned a count that was not "
          + "the number of notes just after their own insert (e.g. \(wrong.first.map { "\"\($0.key)\" returned \($0.value)" } ?? "")): "
          + "the count and the insert must happen together, in one job on the queue, with no "
          + "suspension between them, or other adds and perform blocks get in between"))
    #expect(context.offQueueAccesses == 0, offQueueMessage(context))
  }

  @Test("Two stores on two contexts each stay on their own queue")
  func twoContexts() async throws {
    let first = RecordContext(label: "first")
    let second = RecordContext(label: "second")
    let stores = [NoteStore(context: first), NoteStore(context: second)]

    let titles = try await withDeadline(.seconds(2), "add(_:) on two stores", hint: hint) {
      _ = await stores[0].add("one")
      _ = await stores[1].add("two")
      return [await stores[0].titles(), await stores[1].titles()]
    }

    #expect(titles == [["one"], ["two"]])
    #expect(first.offQueueAccesses + second.offQueueAccesses == 0, offQueueMessage(first))
  }
}

extension PerformQueueTests {
  @Test(
    "A perform block busy for 2.5 s blocks no thread of the pool while the actor waits its turn")
  func waitsWithoutBlocking() async throws {
    let context = RecordContext()
    let store = NoteStore(context: context)

    // The queue is busy with an earlier block (a slow save, a big import) for 2.5 s.
    context.perform {
      Thread.sleep(forTimeInterval: 2.5)
      context.insert("saved")
    }
    let titles = try await withDeadline(
      .seconds(6), "add(_:) and titles() behind a 2.5 s perform block", hint: hint
    ) {
      // Both methods wait their turn while the block runs: a read is a job of the actor
      // like a write, not a wait of its own on the queue.
      async let early = store.titles()
      _ = await store.add("milk")
      _ = await early
      return await store.titles()
    }

    #expect(
      titles == ["saved", "milk"],
      "the actor's job must run after the block queued before it, on the same queue")
  }

  @Test("Each call reads the context's records as they are now, notes from perform blocks too")
  func readsTheRecordsOnEveryCall() async throws {
    let context = RecordContext()
    let store = NoteStore(context: context)

    let (counts, seen) = try await withDeadline(
      .seconds(2), "add(_:) and titles() between perform blocks", hint: hint
    ) {
      var counts: [Int] = []
      var seen: [[String]] = []
      counts.append(await store.add("a"))
      seen.append(await store.titles())
      // The app's old code keeps inserting through perform, between the actor's calls.
      context.perform { context.insert("b") }
      counts.append(await store.add("c"))
      seen.append(await store.titles())
      context.perform { context.insert("d") }
      seen.append(await store.titles())
      counts.append(await store.add("e"))
      return (counts, seen)
    }

    #expect(
      counts == [1, 3, 5],
      Comment(
        rawValue: "add(_:) returned \(counts) for three adds with a perform block's note "
          + "before the second and the third (expected [1, 3, 5]): the count must come from "
          + "the context's records at each add; a number counted once and then kept up by the "
          + "actor misses every note the legacy perform blocks insert afterwards"))
    #expect(
      seen == [["a"], ["a", "b", "c"], ["a", "b", "c", "d"]],
      Comment(
        rawValue: "titles() returned \(seen) when called three times, with perform blocks "
          + "inserting notes in between: each call must read the context's records as they "
          + "are then; a copy kept from an earlier call misses the notes the legacy perform "
          + "blocks inserted since"))
  }

  @Test("Adding a note whose title is already there adds it again")
  func addsTheSameTitleAgain() async throws {
    let context = RecordContext()
    let store = NoteStore(context: context)

    let (counts, titles) = try await withDeadline(
      .seconds(2), "add(_:) of one title three times", hint: hint
    ) {
      var counts: [Int] = []
      counts.append(await store.add("milk"))
      counts.append(await store.add("milk"))
      context.perform { context.insert("milk") }
      counts.append(await store.add("milk"))
      return (counts, await store.titles())
    }

    #expect(
      counts == [1, 2, 4] && titles == Array(repeating: "milk", count: 4),
      Comment(
        rawValue: "adding \"milk\" three times, with a perform block inserting one more, "
          + "returned \(counts) and left \(titles): add(_:) adds a note on every call, as the "
          + "legacy insert does; two notes may share a title, and skipping one silently loses "
          + "what the user wrote"))
  }

  @Test("A job the actor gets after a perform block was submitted runs after that block")
  func laterJobsFollowEarlierBlocks() async throws {
    let context = RecordContext()
    let store = NoteStore(context: context)

    let records = try await withDeadline(
      .seconds(6), "add(_:) around a perform block", hint: hint
    ) {
      // A first block holds the context's queue until a caller thread has submitted, in
      // turn, an add, a legacy block and a second add, so none of them has run yet.
      // Task.immediate calls add(_:) before it returns: each job is enqueued at that point.
      // (An enqueue that waits for the queue holds the caller, and the first block lets go
      // after 2 s.)
      let submitted = DispatchSemaphore(value: 0)
      context.perform { _ = submitted.wait(timeout: .now() + 2) }
      let tasks = await withCheckedContinuation {
        (started: CheckedContinuation<[Task<Int, Never>], Never>) in
        DispatchQueue(label: "a caller").async {
          let first = Task.immediate { await store.add("first add") }
          context.perform { context.insert("legacy block") }
          let second = Task.immediate { await store.add("second add") }
          submitted.signal()
          started.resume(returning: [first, second])
        }
      }
      for task in tasks { _ = await task.value }
      return await withCheckedContinuation { done in
        context.perform { done.resume(returning: context.records) }
      }
    }

    let block = records.firstIndex(of: "legacy block")
    let second = records.firstIndex(of: "second add")
    #expect(block != nil && second != nil && records.count == 3, "records: \(records)")
    if let block, let second {
      #expect(
        block < second,
        Comment(
          rawValue: "the second add(_:) was called after a perform block had been submitted, "
            + "yet its note was inserted before the block's (records: \(records)): the "
            + "queue's order must be the actor's order, so each job has to reach the "
            + "context's queue by itself, when enqueue(_:) gets it; a job that joins a block "
            + "or a queue of the executor's own already waiting on the queue overtakes the "
            + "perform blocks submitted before it"))
    }
  }

  @Test("assumeIsolated off the context's queue stops the program instead of going ahead")
  func assumeIsolatedOffTheQueueTraps() async {
    // Code that calls assumeIsolated trusts the answer and touches the records at once; a
    // check that always says yes lets it do so from any thread.
    await #expect(
      processExitsWith: .failure,
      """
      store.assumeIsolated, called on a thread of the pool, not on the context's queue, went \
      ahead: the store's executor said the caller was isolated to it although it was not on \
      its queue (a checkIsolated() that returns without checking), so code that trusts it \
      touches the records from any thread
      """
    ) {
      assumeIsolatedHere(NoteStore(context: RecordContext()))
    }
  }

  @Test("A store and its context, once nothing uses them, are released with their queue")
  func releasedWithTheStore() async throws {
    weak var releasedStore: NoteStore?
    weak var releasedQueue: DispatchQueue?
    do {
      let context = RecordContext()
      let store = NoteStore(context: context)
      _ = try await withDeadline(.seconds(2), "add(_:)", hint: hint) {
        await store.add("milk")
      }
      releasedStore = store
      releasedQueue = context.queue
    }
    let released = await eventually(within: .seconds(2)) {
      releasedStore == nil && releasedQueue == nil
    }
    #expect(
      released,
      Comment(
        rawValue: releasedStore != nil
          ? "the store was still alive after the test let go of it: something outside it "
            + "keeps it (a global list, a cache, a task that never ends)"
          : "the store was released, but the context's queue was still alive after the "
            + "test let go of the context too: something the store made outlives it (its "
            + "executor, kept in a global list or a cache, holds the queue), so every store "
            + "an app makes leaves its executor and queue behind"))
  }
}
