import ChatKit
import Foundation
import Testing
import WorkbookTesting

@testable import Capstone

/// The contract of `connect(to:port:as:)`: each path, what the caller and the server see,
/// and the test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | resources | thread, callbacks, timing |
/// | --- | --- | --- | --- |
/// | welcomed | returns, joined: `connectJoins`; a welcome 2.5 s late is waited for, not given up on with an error of its own (a time limit): `slowWelcome` | the connection stays open: it is the caller's | suspends, and does not poll for a welcome 1.5 s late (steps that grow with the wait; as many with the welcome at once are not polling): `connectSuspends`; a welcome 2.5 s late holds no thread of any task: `slowWelcome` |
/// | refused (nothing listens) | `.socket`: `refusedConnectionThrows` | — the legacy connection closes its own socket | the error path resumes: `refusedConnectionThrows` |
/// | any name the server allows (1 character; 32, the longest; `-`, `_`, `.`) | returns, joined: `everyAllowedNameJoins` | — | — |
/// | name taken | `.rejected(line)`, unchanged: `takenNameThrows` | only bob stays: `takenNameThrows` | — |
/// | not an address | `.invalidAddress(host)`, the host it was given: `usesTheHost` | nobody joined: `usesTheHost` | — |
/// | cancelled before the call | `CancellationError`: `cancelledBeforeTheCall` | nobody joined: `cancelledBeforeTheCall` | — |
/// | cancelled while waiting | `CancellationError`: `cancellationDisconnects` | the socket hangs up: `cancellationDisconnects` | one resume, the completion's: `cancellationDisconnects` |
/// | cancelled as the welcome resumes | returns or `CancellationError`: `cancelDuringResume` | — | no deadlock with `onCancel`: `cancelDuringResume` |
/// | cancelled after it returned | — nothing left to cancel | still joined: `secondConnect` | — |
/// | a second call on one connection | `.alreadyUsed`, not a cancellation: `secondConnect` | the first join stays: `secondConnect` | — |
/// | the wait for the welcome moved to a Dispatch worker blocked on a semaphore (or a `DispatchGroup`) | — not tested: the caller suspends and no thread of Swift's pool is held; it costs a Dispatch worker per connect in progress | | |
/// | the wait for the welcome blocked on a semaphore inside `Task.detached` | named by `slowWelcome` when it runs alone; in the whole suite only about 2 runs in 10: every test's connect then blocks a pool thread, and a pool check that begins while both are blocked lets its own thread go (on Linux a legacy queue's blocking work runs on the pool's threads too, and must not be taken for the answer's) | | |
/// | the continuation resumed through the main queue | — not caught: it works whenever the main thread serves its queue, as in every test; holding the main thread to show it would stall the suite's main-actor tests in the same process | | |
/// | two calls at once | — the legacy connection serialises them: one joins, the other is the second call | | |
/// | a `disconnect()` from other code while the connect waits, the task not cancelled | — `CancellationError` or the connection's own `.cancelled`: the doc comment promises `CancellationError` for a cancelled task only, so either is the connection's answer | | |
/// | cancelled between a look at `Task.isCancelled` and the legacy connect; or the welcome and `onCancel` both reaching a continuation looked at and cleared in two lock steps | — the gap lies between two steps of the answer's own that call nothing the test can pause, and the welcome cannot be made to land inside it (not caught) | | |
@Suite("8.1 Connect")
struct ConnectTests {
  @Test("connect(to:port:as:) returns once the server has welcomed us")
  func connectJoins() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")
    let connection = ChatConnection()

    try await withDeadline(
      .seconds(2), "connect(to:port:as:)",
      hint: "the completion's success path (error == nil) never resumes the continuation"
    ) {
      try await connection.connect(port: server.port, as: "alice")
    }

    #expect(server.names == ["alice", "bob"], "alice should have joined the chat")
    await eventually("bob to hear that alice joined") {
      bob.recorder.lines.value.contains("* alice joined")
    }
    connection.disconnect()
  }

  @Test("connect(to:port:as:) suspends while it waits, leaving its thread free for the welcome")
  func connectSuspends() async throws {
    let server = try startedServer()
    defer { server.stop() }
    // The completion runs on the caller's one thread, behind it, as on the main queue, and
    // 1.5 seconds late, as from a slow server.
    let executor = OneThreadExecutor()
    let connection = ChatConnection(
      callbacksVia: callbacks(on: executor, late: Locked(pollingWindow)))
    defer { connection.disconnect() }

    try await withDeadline(
      .seconds(5), "connect(to:port:as:)",
      hint: "the completion's success path (error == nil) never resumes the continuation",
      on: executor
    ) {
      try await connection.connect(port: server.port, as: "alice")
    }
    #expect(server.names == ["alice"], "alice should have joined the chat")
    // More steps than one wait needs: a look per poll, or steps of its own that do not grow
    // with the wait (a timer raced against the welcome, which `slowWelcome` judges)? The same
    // connect with the welcome at once tells: a loop that looks runs far fewer steps then.
    if executor.jobsRun > 4 {
      let quick = OneThreadExecutor()
      let again = ChatConnection(callbacksVia: callbacks(on: quick, late: Locked(.zero)))
      defer { again.disconnect() }
      _ = try? await withDeadline(
        .seconds(5), "connect(to:port:as:) with a welcome that comes at once",
        hint: "the completion's success path (error == nil) never resumes the continuation",
        on: quick
      ) {
        try await again.connect(port: server.port, as: "ada")
      }
      if executor.jobsRun - quick.jobsRun < 2 { return }
    }
    expectNoPolling(
      executor, stepsBefore: 0, "connect(to:port:as:)", waitingFor: "a welcome")
  }

  @Test("A refused connection throws the connection's error")
  func refusedConnectionThrows() async throws {
    let port = try closedPort()
    let connection = ChatConnection()

    var thrown: (any Error)?
    do {
      try await withDeadline(
        .seconds(2), "connect(to:port:as:)",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await connection.connect(port: port, as: "alice")
      }
    } catch {
      thrown = error
    }
    #expect(
      thrown is ChatConnectionError,
      Comment(
        rawValue: thrown is CancellationError
          ? "nothing listens on that port, and connect threw CancellationError although "
            + "nobody cancelled it: the connection's own error (a ChatConnectionError) must "
            + "reach the caller; only the legacy .cancelled stands for a cancellation"
          : "nothing listens on that port, so connecting must throw the connection's error"
            + (thrown.map { ", not \($0)" } ?? "")
            + ": was the completion's error swallowed (resume() instead of "
            + "resume(throwing:))?"))
    if let error = thrown as? ChatConnectionError {
      if case .socket = error { return }
      Issue.record(
        Comment(
          rawValue: "nothing listens on that port: the legacy connect reports "
            + ".socket(ECONNREFUSED), and connect threw \(error): pass the connection's own "
            + "error on unchanged"))
    }
  }

  @Test("A name that is taken throws .rejected with the server's line")
  func takenNameThrows() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let bob = try await join(server, as: "bob")

    let error = await #expect(
      throws: ChatConnectionError.self,
      Comment(
        rawValue: "the name is taken, so connecting must throw the connection's error: was the "
          + "completion's error swallowed?")
    ) {
      try await withDeadline(
        .seconds(2), "connect(to:port:as:)",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await ChatConnection().connect(port: server.port, as: "bob")
      }
    }
    #expect(
      error == .rejected("! name taken: bob"), "throw the connection's own error, unchanged")
    #expect(server.names == ["bob"])
    bob.connection.disconnect()
  }

  @Test("A cancel that lands while the welcome resumes the connect does not deadlock")
  func cancelDuringResume() async throws {
    let server = try startedServer()
    defer { server.stop() }
    // The welcome's completion comes 50 ms late, so that the connect has surely suspended
    // by then, and its resume is one from another thread, which the race below needs.
    let slow = SlowCallbacks()
    slow.delay.withLock { $0 = .milliseconds(50) }
    let connection = ChatConnection(callbacksVia: slow.schedule)
    defer { connection.disconnect() }

    // The task is cancelled from another thread while the welcome's completion is still
    // inside its resume: returning (joined) and throwing CancellationError are both fine.
    do {
      try await withCancellationRacingResume(
        .seconds(2), "connect(to:port:as:)",
        hint: "the completion's success path (error == nil) never resumes the continuation"
      ) {
        try await connection.connect(port: server.port, as: "alice")
      }
    } catch is CancellationError {
      // Cancelled in time: fine.
    } catch is DeadlineExceeded {
      // Recorded as never resumed.
    }
  }

  @Test("Cancelling the task disconnects and throws CancellationError")
  func cancellationDisconnects() async throws {
    // The listener never says welcome: only cancellation can end this connect.
    let silent = try SilentListener()
    let connection = ChatConnection()
    let connecting = Task {
      try await connection.connect(port: silent.port, as: "alice")
    }
    try await Task.sleep(for: .milliseconds(100))

    connecting.cancel()

    await #expect(
      throws: CancellationError.self,
      Comment(
        rawValue:
          "a cancelled connect must throw CancellationError: turn the legacy .cancelled into "
          + "CancellationError()")
    ) {
      try await withDeadline(
        .seconds(2), "connect(to:port:as:) after the task was cancelled",
        hint: "the caller's task was cancelled, and the connect went on: the cancellation "
          + "did not reach the legacy connection. Either nothing tells it to stop (call "
          + "disconnect() from withTaskCancellationHandler's onCancel), or the code that "
          + "would runs in a task the caller's cancellation does not reach, such as "
          + "Task.detached or a Task {} it awaits"
      ) {
        try await connecting.value
      }
    }
    await eventually(
      "the connection to hang up once the task was cancelled: cancelling must reach the "
        + "socket, so call disconnect() in onCancel (resuming the continuation alone leaves "
        + "the connection open)"
    ) {
      silent.peerHungUp()
    }
    // The legacy completion (with .cancelled) has run once this returns: a second resume
    // of the continuation would crash here, inside this test.
    await callbacksDelivered(connection)
  }

  @Test("connect(to:port:as:) connects to the host it is given")
  func usesTheHost() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    defer { connection.disconnect() }

    let outcome = await Result {
      try await withDeadline(
        .seconds(2), "connect(to: \"chat.invalid\", …)",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await connection.connect(to: "chat.invalid", port: server.port, as: "alice")
      }
    }
    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    #expect(
      !server.names.contains("alice"),
      "connect(to: \"chat.invalid\", …) joined the test's server on 127.0.0.1: the host the caller gave was not the one connected to, so a caller can never reach another server"
    )
    #expect(
      (outcome.failure as? ChatConnectionError) == .invalidAddress("chat.invalid"),
      "\"chat.invalid\" is not an address: connecting to it must throw the connection's own error, .invalidAddress(\"chat.invalid\"), but it \(outcome.described)"
    )
  }

  @Test(
    "A task cancelled before it calls connect(to:port:as:) gets CancellationError and joins nothing"
  )
  func cancelledBeforeTheCall() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    defer { connection.disconnect() }

    let connecting = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      try await connection.connect(port: server.port, as: "alice")
    }
    let outcome = await Result {
      try await withDeadline(
        .seconds(2), "connect(to:port:as:) in a task that was already cancelled",
        hint: "a task that is already cancelled must be answered at once, with CancellationError"
      ) {
        try await connecting.value
      }
    }
    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    #expect(
      outcome.failure is CancellationError,
      Comment(
        rawValue: "connect(to:port:as:) was called by a task that was already cancelled, and it "
          + "\(outcome.described), not CancellationError: a cancelled task's connect must "
          + "throw CancellationError whenever the cancellation came"
          + ((outcome.failure as? ChatConnectionError) == .alreadyUsed
            ? " (.alreadyUsed: in a task that is already cancelled, withTaskCancellationHandler "
              + "runs onCancel before its body, so disconnect() closed the connection before the "
              + "legacy connect began)" : "")))
    await callbacksDelivered(connection)
    let joined = await eventually(within: .milliseconds(300)) { server.names.contains("alice") }
    #expect(
      !joined,
      "a task that was cancelled before it called connect(to:port:as:) joined the chat: nothing may start once the task is cancelled"
    )
  }

  @Test(
    "A second connect on a used connection throws .alreadyUsed; a cancel after connecting changes nothing"
  )
  func secondConnect() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let connection = ChatConnection()
    defer { connection.disconnect() }
    try await withDeadline(
      .seconds(2), "connect(to:port:as:)",
      hint: "the completion's success path (error == nil) never resumes the continuation"
    ) {
      try await connection.connect(port: server.port, as: "alice")
      // Cancelled once it has returned: the connect is over, so nothing may happen.
      withUnsafeCurrentTask { $0?.cancel() }
    }
    await callbacksDelivered(connection)
    #expect(
      server.names == ["alice"],
      "a task cancelled after connect(to:port:as:) returned hung up: cancelling the connect must stop at the connect, since the caller now owns the connection"
    )

    let outcome = await Result {
      try await withDeadline(
        .seconds(2), "a second connect(to:port:as:) on the same connection",
        hint: "the completion's error path never resumes the continuation"
      ) {
        try await connection.connect(port: server.port, as: "ada")
      }
    }
    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    #expect(
      (outcome.failure as? ChatConnectionError) == .alreadyUsed,
      "a second connect on a connection that is already used must throw the connection's own error, .alreadyUsed (the task was not cancelled), but it \(outcome.described)"
    )
    await callbacksDelivered(connection)
    #expect(
      server.names == ["alice"],
      "after the second connect failed (.alreadyUsed), alice was no longer in the chat: the failed connect hung up the connection the first one made, though a failure of the second call is no reason to end the first; only a cancel of the connect in progress hangs up"
    )
  }

  @Test("connect(to:port:as:) waits for a slow welcome without holding a thread, in any task")
  func slowWelcome() async throws {
    let server = try startedServer()
    defer { server.stop() }
    // The welcome's completion comes 2.5 s late: a wait that holds a thread of the
    // concurrency pool for that long, in this task or one it starts, is noticed.
    let slow = SlowCallbacks()
    slow.delay.withLock { $0 = slowAnswer }
    let connection = ChatConnection(callbacksVia: slow.schedule)
    defer { connection.disconnect() }

    let outcome = await Result {
      try await withDeadline(
        .seconds(6), "connect(to:port:as:) with a welcome that comes 2.5 seconds late",
        hint: "the completion's success path (error == nil) never resumes the continuation"
      ) {
        try await connection.connect(port: server.port, as: "alice")
      }
    }
    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    if case .failure(let error) = outcome {
      Issue.record(
        Comment(
          rawValue: "the server welcomed alice, and its welcome was on its way to the "
            + "connection for 2.5 seconds, as from a slow server; connect(to:port:as:) threw \(error) "
            + "instead, though nobody cancelled it and the connection reported no error: it "
            + "gave up on the welcome by itself (a time limit of its own?). The server may take "
            + "seconds to welcome: only the connection's own answer, or the caller's cancel, "
            + "ends the wait, and an error the connection never reported tells the caller "
            + "nothing true"))
      return
    }
    #expect(server.names == ["alice"], "alice should have joined the chat")
  }

  @Test("A connect cancelled right after any look at its cancellation throws CancellationError")
  func cancelledRightAfterALook() async throws {
    let silent = try SilentListener()
    let rounds = try await cancellingAfterEachLook(
      "connect(to:port:as:)",
      lostCancelCause: "look at the cancellation and hand the connect its way to stop in one "
        + "step, or let the connect's own answer end the call"
    ) {
      let connection = ChatConnection()
      return { try await connection.connect(port: silent.port, as: "alice") }
    }

    for round in rounds {
      let error: (any Error)? = if case .failure(let error) = round.result { error } else { nil }
      #expect(
        error is CancellationError,
        "a connect cancelled \(round.fired ? "right after its look number \(round.look) at its cancellation" : "while it waited") ended with \(error.map { "\($0)" } ?? "success"): a cancelled connect throws CancellationError, whenever the cancel lands; one that lands after the look and before the legacy connect makes the connection refuse with .alreadyUsed (the cancel hung it up first), which is the cancel too"
      )
    }
  }

  @Test("Every name the server allows joins, from one character to the longest")
  func everyAllowedNameJoins() async throws {
    let server = try startedServer()
    defer { server.stop() }
    let longest = String(repeating: "n", count: ChatServer.maximumNameLength - 4) + "-_.9"
    for name in ["a", longest] {
      let connection = ChatConnection()
      defer { connection.disconnect() }
      let outcome = try await withDeadline(
        .seconds(2), "connect(to:port:as: \"\(name)\")",
        hint: "the completion's success path (error == nil) never resumes the continuation"
      ) {
        await Result { try await connection.connect(port: server.port, as: name) }
      }
      #expect(
        server.names.contains(name),
        """
        connect(to:port:as:) with the \(name.utf8.count)-character name "\(name)", which the \
        server accepts (1 to \(ChatServer.maximumNameLength) letters, digits, '-', '_' or \
        '.'), ended with \(outcome) and did not join: the server decides which names it \
        takes, so a name it would take must reach it
        """)
    }
  }
}
