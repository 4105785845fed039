import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import Structured

private let hint =
  "the actor's job never ran: enqueue(_:) must run every job on the queue with "
  + "runSynchronously(on:)"

private func offQueueMessage(_ context: RecordContext) -> Comment {
  """
  the records were touched \(context.offQueueAccesses) time(s) off the context's queue: \
  the actor needs a custom executor that runs its jobs on context.queue (unownedExecutor)
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
/// | a `perform` block busy for 2.5 s | — | — | no thread of the pool blocked while the actor waits its turn: `waitsWithoutBlocking` |
/// | `assumeIsolated` in a `perform` block | — optional (the hints' `checkIsolated`): an actor that hops with `perform` in each method is right too | | |
/// | failure, cancellation | — the methods neither throw nor wait on anything cancellable | | |
/// | jobs run through a queue of the actor's own that targets the context's | — | — on the context's thread, in the same order: an actor drains its own jobs in one go whatever the queue, so a perform block submitted between two of its jobs waits either way; only a job enqueued in the instant the sub-queue finishes a drain could overtake one, which no test can aim at (not caught) | — |
/// | jobs gathered and run by one drain block, or run at once when `enqueue` is called on the queue | — | — not caught: either changes the order only when one of the actor's jobs is enqueued while the context's queue is running, with a perform block submitted before it; no test here arranges that moment | — |
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

    #expect(counts == [1, 2, 3])
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
      .seconds(6), "add(_:) behind a 2.5 s perform block", hint: hint
    ) {
      _ = await store.add("milk")
      return await store.titles()
    }

    #expect(
      titles == ["saved", "milk"],
      "the actor's job must run after the block queued before it, on the same queue")
  }
}
