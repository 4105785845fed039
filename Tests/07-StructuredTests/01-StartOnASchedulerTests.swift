import CoroutineKit
import Dispatch
import Foundation
import Testing
import WorkbookTesting

@testable import Structured

private enum LookupError: Error {
  case notFound
}

private let loadHint =
  "the task never got past waiting for the future: resume the continuation from "
  + "whenComplete, whatever the result"

/// A future for `result`, completed later on a background queue.
private func later(
  _ result: Result<String, any Error>, after delay: Double = 0.05
)
  -> CoFuture<String>
{
  let promise = pendingPromise()
  DispatchQueue.global().asyncAfter(deadline: .now() + delay) { promise.complete(with: result) }
  return promise
}

/// A promise the test answers when it chooses, or "late" as soon as the pool's watchdog finds
/// the main actor blocked (see `PoolRelief`): a load that blocks the main actor while it
/// waits for this promise would otherwise keep every test from ever answering it.
private func pendingPromise() -> CoPromise<String> {
  let promise = CoPromise<String>()
  PoolRelief.register { _ = promise.success("late") }
  return promise
}

/// Keeps the calling thread (and whatever actor runs on it) busy for `seconds`.
private func holdThisThread(seconds: Double) {
  Thread.sleep(forTimeInterval: seconds)
}

/// Lets the main actor run other jobs `times` times: it returns only while the main actor is
/// free.
@MainActor private func yieldTheMainActor(times: Int) async {
  for _ in 0..<times { await Task.yield() }
}

/// The contract of `ProfileScreen.load(_:)`: each path, what the screen and the lookup see,
/// and the test that checks it (— where a column does not apply, and why).
///
/// | path | status shown | the lookup's future | main actor, timing |
/// | --- | --- | --- | --- |
/// | the name arrives, late or at once | `Loading…` at once, then the name: `showsTheName` | — | — |
/// | the lookup fails, or its future is cancelled by the lookup | `Unavailable`: `showsUnavailable` | — | — |
/// | the same id loaded again, after a failure | `Loading…`, then the new answer: `sameIdAgain` | a new lookup: `sameIdAgain` | — |
/// | a lookup pending | — | — | the main actor stays free: `mainActorStaysFree`; nothing wakes up to look meanwhile: `waitsWithoutPolling` |
/// | the load is cancelled while pending | nothing changes after: `cancellingCancelsTheLookup` | cancelled: `cancellingCancelsTheLookup` | — |
/// | cancelled after the future succeeded, before the name is shown | nothing changes: `cancelledAfterSuccess` | — | — |
/// | a second load before the first ends | only the newer answer shows: `newLoadWins`; even when the first's answer came just before, while the main actor was taken: `answerJustBeforeANewerLoad` | the first cancelled: `newLoadWins` | the check and the write in one main-actor step: `answerJustBeforeANewerLoad` |
/// | the answer shown by a `Task { @MainActor }` of its own, after the load's task ended | — not caught: on the one main actor, that task runs before anything the test does once the load's task has ended (its jobs run in the order they came), so awaiting the load shows the answer; only a cancel from another thread, in that instant, would see the late write |
/// | three loads, the first over before the third | the replaced loads change nothing, the third's answer shows: `everyLoadCancelsTheOneBefore` | the first's task and the second's lookup cancelled: `everyLoadCancelsTheOneBefore` | — |
/// | cancelled after it ended | — the task has ended: nothing left to cancel | | |
// The screen is main-actor isolated, so these tests run on the main actor too.
@MainActor
@Suite("7.1 Start on a scheduler")
struct StartOnASchedulerTests {
  @Test("load() shows Loading… at once, then the name, for a late or a ready future")
  func showsTheName() async throws {
    for ready in [false, true] {
      let screen = ProfileScreen { _ in
        ready ? CoFuture(value: "Ada Lovelace") : later(.success("Ada Lovelace"))
      }

      let task = screen.load("ada")
      #expect(
        screen.status == "Loading…",
        "load() must show Loading… before it returns: the body of a new Task runs later")

      try await withDeadline(.seconds(2), "load(\"ada\")", hint: loadHint) { await task.value }

      #expect(screen.status == "Ada Lovelace")
    }
  }

  @Test("load() shows Unavailable when the lookup fails, or its future is cancelled by others")
  func showsUnavailable() async throws {
    for cancelledByTheLookup in [false, true] {
      let screen = ProfileScreen { _ in
        guard cancelledByTheLookup else { return later(.failure(LookupError.notFound)) }
        let promise = pendingPromise()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { promise.cancel() }
        return promise
      }

      let task = screen.load("nobody")
      try await withDeadline(
        .seconds(2), "load(\"nobody\")",
        hint: "a failed future must resume the continuation too: resume(with:) the result"
      ) { await task.value }

      #expect(
        screen.status == "Unavailable",
        cancelledByTheLookup
          ? "the lookup's future was cancelled by the lookup itself, while the load was not cancelled, and the screen showed \"\(screen.status)\": only a cancelled load may leave the screen as it is; a future that fails as cancelled is a failed lookup like any other"
          : "a failed lookup showed \"\(screen.status)\"")
    }
  }

  @Test("Loading an id again, after its load ended, looks it up again")
  func sameIdAgain() async throws {
    let lookups = Locked(0)
    let answers = Locked(["Unavailable first", "Ada Lovelace"])
    let screen = ProfileScreen { _ in
      lookups.withLock { $0 += 1 }
      let answer = answers.withLock { $0.removeFirst() }
      return later(
        answer == "Unavailable first" ? .failure(LookupError.notFound) : .success(answer))
    }

    let first = screen.load("ada")
    try await withDeadline(.seconds(2), "load(\"ada\")", hint: loadHint) { await first.value }
    let second = screen.load("ada")
    let shownAtOnce = screen.status
    try await withDeadline(.seconds(2), "load(\"ada\") again", hint: loadHint) {
      await second.value
    }

    #expect(
      lookups.value == 2 && shownAtOnce == "Loading…" && screen.status == "Ada Lovelace",
      "load(\"ada\") after a first load of \"ada\" had failed must start over (\"Loading…\", a new lookup, its answer): it showed \"\(shownAtOnce)\" at once, looked up \(lookups.value) times in all, and ended showing \"\(screen.status)\""
    )
  }

  @Test("The main actor stays free while the lookup is pending")
  func mainActorStaysFree() async throws {
    let promise = pendingPromise()
    let screen = ProfileScreen { _ in promise }
    let task = screen.load("ada")

    // This test runs on the main actor: each await below needs it to be free. Inside a
    // deadline, whose watch names a main actor that stops running jobs.
    try await withDeadline(.seconds(2), "load(\"ada\")", hint: loadHint) {
      await yieldTheMainActor(times: 10)
    }
    #expect(screen.status == "Loading…")
    promise.success("Ada Lovelace")

    try await withDeadline(.seconds(2), "load(\"ada\")", hint: loadHint) { await task.value }
    #expect(screen.status == "Ada Lovelace")
  }

  @Test("Cancelling the load cancels the lookup, and nothing changes on screen after that")
  func cancellingCancelsTheLookup() async throws {
    let promise = pendingPromise()
    let screen = ProfileScreen { _ in promise }
    let task = screen.load("ada")

    task.cancel()
    try await withDeadline(
      .seconds(2), "a cancelled load()",
      hint: "the task load() returned was cancelled, and its future was not: cancelling the "
        + "task must cancel the future (withTaskCancellationHandler), or the task waits for an "
        + "answer nobody wants. If it already does, does the cancel reach it? The task load() "
        + "returns must be the one that waits on the future, not a Task wrapped around it or a "
        + "detached one, which its cancellation never reaches"
    ) { await task.value }
    promise.success("Ada Lovelace")  // Too late: ignored if cancelled already.

    #expect(promise.isCanceled, "cancelling the load should cancel its future")
    #expect(screen.status == "Loading…", "a cancelled load must not change the screen")
  }

  @Test("A load cancelled after its future succeeded changes nothing on screen")
  func cancelledAfterSuccess() async throws {
    for ready in [true, false] {
      let promise = pendingPromise()
      if ready { promise.success("Ada Lovelace") }
      let screen = ProfileScreen { _ in promise }
      let task = screen.load("ada")
      if !ready {
        // Let the task reach its wait; then the answer comes, on this thread.
        for _ in 0..<10 { await Task.yield() }
        promise.success("Ada Lovelace")
      }

      // The future has succeeded, but the task cannot go on before this test gives the main
      // actor back: it is cancelled first, so the answer is stale.
      task.cancel()
      try await withDeadline(.seconds(2), "a cancelled load()", hint: loadHint) {
        await task.value
      }

      #expect(
        screen.status == "Loading…",
        """
        a load cancelled after its future had already succeeded still showed the name: \
        check Task.isCancelled after the await, before changing status
        """)
    }
  }

  @Test("A new load cancels the one before, so a late answer never replaces a newer one")
  func newLoadWins() async throws {
    let slow = pendingPromise()
    let screen = ProfileScreen { id in
      id == "ada" ? slow : later(.success("Grace Hopper"), after: 0.01)
    }

    let first = screen.load("ada")
    let second = screen.load("grace")
    try await withDeadline(.seconds(2), "load(\"grace\")", hint: loadHint) { await second.value }
    slow.success("Ada Lovelace")
    _ = try await withDeadline(
      .seconds(2), "the first load(\"ada\")",
      hint: "load() must cancel the previous load's task, and that task must end"
    ) { await first.value }

    #expect(
      screen.status == "Grace Hopper",
      """
      the first, older load replaced the newer one: load() must cancel the load before it \
      (keep its task, and cancel it)
      """)
    #expect(slow.isCanceled, "the new load should cancel the previous load's future")
  }

  @Test("Every load cancels the one before it, even after an older one has ended")
  func everyLoadCancelsTheOneBefore() async throws {
    let ada = pendingPromise()
    let grace = pendingPromise()
    let screen = ProfileScreen { id in
      switch id {
      case "ada": ada
      case "grace": grace
      default: later(.success("Alan Turing"), after: 0.01)
      }
    }

    let first = screen.load("ada")
    let second = screen.load("grace")
    #expect(
      first.isCancelled,
      "load(\"grace\") did not cancel the task of load(\"ada\"), which it replaced: load() must cancel the load before it (keep the task of the load in progress, and cancel that task; cancelling its lookup alone leaves the task to show its outcome)"
    )
    _ = try await withDeadline(
      .seconds(2), "the first load(\"ada\")",
      hint: "load() must cancel the previous load's task, and that task must end"
    ) { await first.value }
    #expect(
      screen.status == "Loading…",
      "the replaced load(\"ada\") ended, and the screen showed \"\(screen.status)\" while load(\"grace\") was still loading: a cancelled load must change nothing"
    )

    let third = screen.load("alan")
    try await withDeadline(.seconds(2), "load(\"alan\")", hint: loadHint) { await third.value }
    grace.success("Grace Hopper")
    _ = try await withDeadline(
      .seconds(2), "the second load(\"grace\")",
      hint: "load() must cancel the previous load's task, and that task must end"
    ) { await second.value }

    #expect(
      grace.isCanceled && screen.status == "Alan Turing",
      "the third load did not cancel the second (its lookup \(grace.isCanceled ? "was" : "was not") cancelled, and the screen shows \"\(screen.status)\"): the handle of the load in progress must stay the newest one's; a load that ends must not clear a newer load's handle"
    )
  }

  @Test("An answer that came just before a newer load never shows, wherever the load waited")
  func answerJustBeforeANewerLoad() async throws {
    let ada = pendingPromise()
    let grace = pendingPromise()
    let screen = ProfileScreen { id in id == "ada" ? ada : grace }

    let first = screen.load("ada")
    // Let the load reach its wait; then the answer comes, on this thread, and the main actor
    // stays taken for a moment: long enough for work on other threads to look at the load,
    // find it not cancelled, and queue its write for the main actor.
    try await withDeadline(.seconds(2), "load(\"ada\")", hint: loadHint) {
      await yieldTheMainActor(times: 10)
    }
    _ = ada.success("Ada Lovelace")
    holdThisThread(seconds: 0.3)
    // The newer load cancels the first before the main actor is free again.
    let second = screen.load("grace")
    _ = try await withDeadline(
      .seconds(2), "the first load(\"ada\")",
      hint: "load() must cancel the previous load's task, and that task must end"
    ) { await first.value }
    for _ in 0..<10 { await Task.yield() }

    #expect(
      screen.status == "Loading…",
      "load(\"ada\")'s answer came, then load(\"grace\") replaced it before the main actor was free, and the screen showed \"\(screen.status)\": a load must decide whether it was cancelled and write the screen in one step on the main actor (a check made on another thread, followed by a hop to the main actor to write, lets a newer load slip in between)"
    )
    second.cancel()
  }

  @Test("Waits for the answer without looking again and again")
  func waitsWithoutPolling() async throws {
    let promise = pendingPromise()
    let screen = ProfileScreen { _ in promise }
    let task = screen.load("ada")
    try await withDeadline(.seconds(2), "load(\"ada\")", hint: loadHint) {
      await yieldTheMainActor(times: 10)
    }

    // Nothing happens until the process has had a quiet half second (the other tests of the
    // suite end within about a second) or four have passed.
    try await Task.sleep(for: .milliseconds(150))
    let wakeups = await IdleWatch.fewestWakeups(
      in: .milliseconds(500), within: .seconds(4), atMost: 40)
    promise.success("Ada Lovelace")
    try await withDeadline(.seconds(2), "load(\"ada\")", hint: loadHint) { await task.value }

    #expect(screen.status == "Ada Lovelace")
    if let wakeups {
      #expect(
        wakeups <= 40,
        "the process woke up at least \(wakeups) times in every half second in which the lookup was pending (an idle process: about 10): something looks at the future over and over (a loop around future.result and Task.sleep) instead of waiting for whenComplete to call back; on a phone, a loop that looks keeps the CPU awake and drains the battery"
      )
    }
  }
}
