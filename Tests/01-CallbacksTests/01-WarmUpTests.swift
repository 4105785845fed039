import LegacyKit
import Testing
import WorkbookTesting

@testable import Callbacks

/// The contract of `greeting(for:from:)`: each path, what the caller sees, and the test that
/// checks it (— where a column does not apply, and why).
///
/// | path | result | greeter requests | thread, timing |
/// | --- | --- | --- | --- |
/// | greeting inside `greet`, soon on another thread, 200 ms later | the handler's greeting: `returnsTheGreeting` | one per call: `asksOnce`; any name, as given (spaces, empty, a newline): `nameAsGiven` | any thread: `returnsTheGreeting` |
/// | greeting on the caller's own thread, 0.5 s later | the greeting: `suspendsWhileWaiting` | one: `suspendsWhileWaiting` | suspends, neither blocks nor polls: `suspendsWhileWaiting` |
/// | the app's main thread busy | the greeting, while it is still busy: `doesNotWaitForTheMainThread` | — | no hop through the main thread: `doesNotWaitForTheMainThread` |
/// | a second call on the same greeter | its own greeting: `secondCall` | two: `secondCall` | — |
/// | greeting 2.5 s later | the greeting: `slowGreeterHoldsNoThread` | — | holds no thread of the pool while it waits, in any task: `slowGreeterHoldsNoThread` |
/// | never answered | — a `Greeter` answers every request once; a continuation never resumed fails every test's deadline | | |
/// | a failure | — the greeter cannot fail | | |
/// | two calls at once | — each call has a continuation of its own and shares nothing but the greeter | | |
/// | cancelled while it waits | it ends, once, and nothing more when the greeting comes (what it returns then is not part of the contract: the greeting, or a placeholder): `cancelledWhileWaiting` | one: `cancelledWhileWaiting` | — |
/// | cancelled before, after | — as "while it waits": `greet` cannot be cancelled, so nothing differs; a call that looks at `Task.isCancelled` first and, cancelled, returns a placeholder without asking the greeter is allowed too (a cancelled caller wants no greeting) | | |
/// | cancelled while it waits, answered "" at once (a cancellation handler, or an `AsyncStream` whose loop ends on cancel) | — not a mistake: a placeholder, as the row above allows; the greeter still answers, and nothing is resumed twice | | |
/// | the greeting looked for in one locked step and the caller's continuation stored in another | — a greeting that comes between the two is kept where nobody looks, and the caller waits for ever; the gap lies between two lock steps of the answer's own that call nothing the test can pause (the greeter answers on a thread of its own), so no test lands in it every run (not caught) | | |
@Suite("1.1 Warm-up")
struct WarmUpTests {
  /// Synchronously inside the call, soon from another thread, and late from another thread.
  static let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(200))]

  static let hint =
    "greeting(for:from:) must resume its continuation inside the completion handler, "
    + "with the greeting the handler receives; if it does, was the continuation kept "
    + "where another call could replace it (a global, a property of a shared object)? "
    + "The tests make calls at the same time, and a continuation overwritten by another "
    + "call's is never resumed"

  @Test("Returns the greeting the completion handler receives", arguments: scripts)
  func returnsTheGreeting(script: CallbackScript) async throws {
    let greeter = Greeter(script: script)

    let received = try await withDeadline(.seconds(2), "greeting(for:from:)", hint: Self.hint) {
      await greeting(for: "Ada", from: greeter)
    }

    #expect(received == "Hello, Ada!", Self.wrongGreeting(received))
  }

  /// What went wrong when `greeting(for:from:)` returned `received` instead of the greeting.
  static func wrongGreeting(_ received: String) -> Comment {
    if received.isEmpty {
      return """
        greeting(for:from:) returned an empty greeting: it returned before the greeter's \
        handler ran; suspend on a continuation until the handler delivers the greeting
        """
    }
    if received.hasPrefix("Hello, ") && received.hasSuffix("!") {
      return """
        greeting(for:from:) returned "\(received)": the greeting of another call (one made at \
        the same time, or earlier), not the one this call's handler received. Each call's \
        greeting must travel inside that call (its own continuation), not through anything \
        calls share or keep (a global, a property of a shared object, a cache)
        """
    }
    return """
      greeting(for:from:) returned "\(received)", not the greeting the handler received: \
      resume the continuation with the handler's argument
      """
  }

  /// What went wrong when `greeter` was asked more than once for one greeting.
  static func askedAgain(_ greeter: Greeter, expected: Int = 1) -> Comment {
    if greeter.requestCount < expected {
      return """
        greeting(for:from:) asked this greeter \(greeter.requestCount) times for \(expected) \
        greeting(s): each call asks the greeter it is given; a greeting kept from an earlier \
        call (a cache) may be another greeter's, or one this greeter would no longer give
        """
    }
    return """
      greeting(for:from:) asked the greeter \(greeter.requestCount) times for \(expected) \
      greeting(s): call greet(_:completion:) once per greeting, inside withCheckedContinuation
      """
  }

  @Test("Suspends while it waits, so a greeting delivered on its own thread can arrive")
  func suspendsWhileWaiting() async throws {
    let executor = OneThreadExecutor()
    let greeter = Greeter(script: lateOnThreadOf(executor))

    let received = try await expectSuspends(
      "greeting(for:from:)", hint: Self.hint, on: executor, isRight: { $0 == "Hello, Ada!" }
    ) {
      await greeting(for: "Ada", from: greeter)
    }

    #expect(received == "Hello, Ada!", Self.wrongGreeting(received))
    #expect(greeter.requestCount == 1, Self.askedAgain(greeter))
  }

  @Test("Returns while the app's main thread is busy: the greeting does not need it")
  func doesNotWaitForTheMainThread() async throws {
    let greeter = Greeter(script: .default)

    let (received, inTime) = try await withDeadline(
      .seconds(4), "greeting(for:from:)", hint: Self.hint
    ) {
      await whileTheMainThreadIsBusy { await greeting(for: "Ada", from: greeter) }
    }

    #expect(received == "Hello, Ada!", Self.wrongGreeting(received))
    #expect(inTime, waitedForTheMainThread("greeting(for:from:)"))
  }

  @Test("Asks the greeter exactly once per call", arguments: scripts)
  func asksOnce(script: CallbackScript) async throws {
    let greeter = Greeter(script: script)

    _ = try await withDeadline(.seconds(2), "greeting(for:from:)", hint: Self.hint) {
      await greeting(for: "Ada", from: greeter)
    }

    #expect(greeter.requestCount == 1, Self.askedAgain(greeter))
  }

  @Test("A second call on the same greeter gets its own greeting", arguments: scripts)
  func secondCall(script: CallbackScript) async throws {
    let greeter = Greeter(script: script)

    let first = try await withDeadline(.seconds(2), "greeting(for:from:)", hint: Self.hint) {
      await greeting(for: "Ada", from: greeter)
    }
    let second = try await withDeadline(.seconds(2), "greeting(for:from:)", hint: Self.hint) {
      await greeting(for: "Grace", from: greeter)
    }

    #expect(first == "Hello, Ada!", Self.wrongGreeting(first))
    #expect(second == "Hello, Grace!", Self.wrongGreeting(second))
    #expect(greeter.requestCount == 2, Self.askedAgain(greeter, expected: 2))
  }

  @Test(
    "Any name is passed to the greeter as given: spaces around it, or an empty one",
    arguments: [" Ada ", "", "Ada\nLovelace"])
  func nameAsGiven(name: String) async throws {
    let greeter = Greeter(script: .default)

    let received = try await withDeadline(.seconds(2), "greeting(for:from:)", hint: Self.hint) {
      await greeting(for: name, from: greeter)
    }

    // Asked for exactly this name, and still another greeting: it came from another call,
    // through something the calls share.
    let fromAnotherCall = greeter.namesAsked == [name] && received != "Hello, \(name)!"
    #expect(
      !fromAnotherCall,
      "greeting(for: \(name.debugDescription)) asked the greeter for exactly that name, and returned \(received.debugDescription): the greeting of another call made at the same time. Each call's greeting must travel inside that call (its own continuation), not through anything calls share (a global, a property of a shared object)"
    )
    if fromAnotherCall { return }
    #expect(
      received == "Hello, \(name)!" && greeter.requestCount == 1,
      "greeting(for: \(name.debugDescription)) returned \(received.debugDescription) after asking the greeter \(greeter.requestCount) time\(greeter.requestCount == 1 ? "" : "s"): the name goes to the greeter as it was given, whatever it is, and the greeting is the greeter's (\("Hello, \(name)!".debugDescription)); deciding for the greeter what a name should be changes its answer"
    )
  }

  @Test("A call whose task is cancelled while it waits still ends, once")
  func cancelledWhileWaiting() async throws {
    let (script, delivered) = countedLater()
    let greeter = Greeter(script: script)

    let ending = try await endingOfACallCancelledWhileWaiting(
      "greeting(for:from:)", hint: Self.hint, asked: { greeter.requestCount > 0 },
      answered: { delivered.value > 0 }
    ) {
      await greeting(for: "Ada", from: greeter)
    }

    // What a cancelled call returns is not part of the contract (a placeholder is fine);
    // that it ends, once, is.
    _ = ending
    #expect(greeter.requestCount == 1, Self.askedAgain(greeter))
  }

  @Test("Suspends while a slow greeter works, holding no thread of the pool")
  func slowGreeterHoldsNoThread() async throws {
    let greeter = Greeter(script: slowAnswer)

    let received = try await expectHoldsNoThread("greeting(for:from:)") {
      await greeting(for: "Ada", from: greeter)
    }

    #expect(received == "Hello, Ada!", Self.wrongGreeting(received))
  }
}
