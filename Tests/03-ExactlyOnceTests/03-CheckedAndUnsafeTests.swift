import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import ExactlyOnce

// Serialized: while developing this suite, Swift Testing 6.3.1 on Linux now and then hung
// (a few runs in a hundred) when several exit tests (below) ran at once and a child process
// exited quickly. Taking turns, with children that live a moment, has not hung since. The
// other tests are quick, so nothing is lost.
/// The contract of `ContinuationChecking`, `withBridgeContinuation` and
/// `reading(of:from:checking:)`: each path, what the caller sees, and the test that checks it
/// (— where a column does not apply, and why).
///
/// | path | result | kind of continuation | misuse reported |
/// | --- | --- | --- | --- |
/// | `.standard` in a debug build | — | checked: `debugBuildsAreChecked`; `reading`'s default too: `readingChecksByDefault`; the helper's default too: `helperChecksByDefault` | a leak through the default: `readingChecksByDefault` |
/// | `.standard` in a release build | — the tests run a debug build only: a release-only choice cannot be observed by them | | |
/// | `standard` rewritten to test a condition SwiftPM never defines (`#if RELEASE`), or an environment variable | — still .checked in the debug build the tests run (unless someone sets the variable), so only a release build could tell, and the tests run none; the starter already gives `standard` as it must stay, and the hints say to leave it (not caught) | | |
/// | `.checked`, `.unchecked` asked for | — | the kind asked for: `handsOutTheRequestedKind` | — |
/// | a read, both ways (inside the call, on threads) | the same value: `sameValueBothWays` | — | — |
/// | a hub that answers after 2.5 s, both ways | its value, no thread of the pool held meanwhile: `slowHubHoldsNoThread` | — | — |
/// | ten thousand reads from eight tasks, both ways | every value: `manyReadsBothWays` | — | — |
/// | a second resume, checked | — | — | stops the program inside the hub's call, naming the bridge (a resume put off into a Task or onto a queue lets the call return first, which the test sees on every run): `checkedCatchesASecondResume`; naming any other bridge built on the helper by its own name: `messagesNameEachBridge` |
/// | a continuation dropped, checked / unchecked | — | — | reported as a leak: `checkedReportsALeak`; silent: `uncheckedIsSilent` |
/// | cancelled task | — reading(of:from:checking:) promises nothing for a cancelled task | | |
@Suite("3.3 Checked and unsafe", .serialized)
struct CheckedAndUnsafeTests {
  static let bothWays: [ContinuationChecking] = [.checked, .unchecked]
  static let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(100))]

  static let hint =
    "withBridgeContinuation(_:isolation:function:_:) never hands body a continuation that "
    + "resumes it"

  @Test("Tests run a debug build, so the standard choice is the checked one")
  func debugBuildsAreChecked() {
    #expect(
      ContinuationChecking.standard == .checked,
      """
      the standard choice must be .checked in debug builds, where tests run: unchecked only \
      in release builds (#if DEBUG)
      """)
  }

  @Test(
    "withBridgeContinuation hands out the kind of continuation it was asked for",
    arguments: bothWays)
  func handsOutTheRequestedKind(checking: ContinuationChecking) async throws {
    let handedOut = try await withDeadline(
      .seconds(2), "withBridgeContinuation(_:isolation:function:_:)", hint: Self.hint
    ) {
      await withBridgeContinuation(checking) {
        (continuation: BridgeContinuation<ContinuationChecking>) in
        switch continuation {
        case .checked: continuation.resume(returning: ContinuationChecking.checked)
        case .unchecked: continuation.resume(returning: ContinuationChecking.unchecked)
        }
      }
    }

    #expect(
      handedOut == checking,
      """
      asked for \(checking), withBridgeContinuation handed body a \(handedOut) \
      continuation: switch over `checking`
      """)
  }

  @Test(
    "reading(of:from:checking:) returns the same value both ways",
    arguments: bothWays, scripts)
  func sameValueBothWays(checking: ContinuationChecking, script: CallbackScript) async throws {
    let hub = SensorHub(script: script)

    let value = try await withDeadline(.seconds(2), "reading(of:from:checking:)", hint: Self.hint) {
      await reading(of: 7, from: hub, checking: checking)
    }

    #expect(
      value == SensorHub.value(of: 7),
      Comment(
        rawValue: value.isNaN
          ? "the bridge returned nan, a value the hub never gives: it resumed before the hub "
            + "had answered (here \(script)), with whatever it held then, instead of resuming "
            + "from the hub's answer"
          : "the bridge returned another channel's value"))
    #expect(hub.reads == 1, "one reading must read the hub exactly once")
  }

  @Test(
    "A hub that answers after 2.5 s is waited for without holding a thread, both ways",
    arguments: bothWays)
  func slowHubHoldsNoThread(checking: ContinuationChecking) async throws {
    let hub = SensorHub(script: CallbackScript(timing: .after(.milliseconds(2500))))

    let value = try await withDeadline(
      .seconds(10), "reading(of:from:checking: .\(checking)) from a hub that answers after 2.5 s",
      hint: "the \(checking) bridge never resumed"
    ) {
      await reading(of: 3, from: hub, checking: checking)
    }

    #expect(value == SensorHub.value(of: 3), "the bridge returned another channel's value")
  }

  @Test("withBridgeContinuation with no setting hands out a checked continuation in this build")
  func helperChecksByDefault() async throws {
    let handedOut = try await withDeadline(
      .seconds(2), "withBridgeContinuation(_:isolation:function:_:)", hint: Self.hint
    ) {
      await withBridgeContinuation { (continuation: BridgeContinuation<ContinuationChecking>) in
        switch continuation {
        case .checked: continuation.resume(returning: ContinuationChecking.checked)
        case .unchecked: continuation.resume(returning: ContinuationChecking.unchecked)
        }
      }
    }

    #expect(
      handedOut == .checked,
      "called with no setting, withBridgeContinuation handed out a \(handedOut) continuation in a debug build: its default must be .standard, so that every bridge that does not choose is checked where tests run"
    )
  }

  @Test(
    "The hot path answers ten thousand reads from eight tasks at once, both ways",
    arguments: bothWays)
  func manyReadsBothWays(checking: ContinuationChecking) async throws {
    let hub = SensorHub()

    let total = try await withDeadline(.seconds(2), "reading(of:from:checking:)", hint: Self.hint) {
      await withTaskGroup(of: Double.self) { group in
        for task in 0..<8 {
          group.addTask {
            var sum = 0.0
            for read in 0..<1_250 {
              sum += await reading(of: (task + read) % 16, from: hub, checking: checking)
            }
            return sum
          }
        }
        return await group.reduce(0, +)
      }
    }

    let expected = (0..<8).reduce(0.0) { sum, task in
      (0..<1_250).reduce(sum) { sum, read in sum + SensorHub.value(of: (task + read) % 16) }
    }
    #expect(total == expected)
    #expect(hub.reads == 10_000)
  }

  // The next three tests run their body in a child process (an exit test), because a
  // checked continuation that catches a second resume stops the whole process. Each child
  // stays alive a moment, long enough for the runtime to report what it saw. Their
  // messages quote only the runtime's misuse line from the child's output, never the whole
  // output: a crash report in this process's output would look like a crash of the tests.

  @Test("With checks on, a second resume stops the program with a message naming the bridge")
  func checkedCatchesASecondResume() async throws {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      // An unchecked continuation resumed twice may leave the child stuck for good, and
      // the test waiting on it: the child ends itself, failing and silent, after a moment.
      endThisChild(after: 1.5)
      // Both answers come inside the call. The checks stop a bridge that resumes there
      // before the call can return; one that puts the resume off (a Task, a queue) lets it
      // return, and the child says so at once and ends, failing too, so that the test gets
      // its output (a failed exit expectation returns none). The pool is squeezed to the one
      // thread busy in the call, so a resume put off into a Task cannot run before that.
      let thenEnd = CallbackScheduler(name: "inside the call, then the program ends") { answers in
        answers()
        FileHandle.standardError.write(Data("\n\(Self.callReturned)\n".utf8))
        _exit(3)
      }
      let twiceAtOnce = SensorHub(script: CallbackScript(timing: .scheduled(thenEnd), times: 2))
      _ = try await withPoolOfOne("reading(of:from:checking:)") {
        await reading(of: 1, from: twiceAtOnce, checking: .checked)
      }
    }
    let said = misuseMessage(in: result)
    let returned = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
      .contains(Self.callReturned)
    #expect(
      !returned
        && said.contains(
          "reading(of:from:checking:) tried to resume its continuation more than once"),
      Comment(
        rawValue: returned && said == Self.silence
          ? "reading(of:from:checking: .checked) let the hub's call return after it had "
            + "answered twice, and nothing stopped the second answer: either the bridge kept "
            + "it from the continuation (a guard of its own that lets only the first answer "
            + "through hides the very misuse the checked path is there to stop), or the "
            + "answers were resumed later, outside the hub's call (from a Task or a queue of "
            + "their own), so the checks could not act while the hub was answering; the "
            + "runtime said: \(said)"
          : returned
            ? "reading(of:from:checking: .checked) let the hub's call return after it had "
              + "answered twice: the answers were resumed later, outside the hub's call (from a "
              + "Task or a queue of their own), so the checks could not stop the second one while "
              + "the hub was answering, and the reading came back late; the runtime said: \(said)"
            : said == Self.silence
              ? "reading(of:from:checking: .checked) let the hub answer twice and nothing stopped "
                + "it: the continuation was not a checked one (.checked must reach "
                + "withBridgeContinuation, which then uses withCheckedContinuation), or the "
                + "second answer was kept from it; the runtime said: \(said)"
              : "the checked path must stop a second resume and name the bridge (pass `function` "
                + "on to withCheckedContinuation); the runtime said: \(said)"))
  }

  @Test("With checks on, a continuation dropped without a resume is reported as a leak")
  func checkedReportsALeak() async throws {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      let silent = SensorHub(script: .never)
      Task { _ = await reading(of: 1, from: silent, checking: .checked) }
      try await untilTheHubDroppedItsCallback(silent)
    }
    let said = misuseMessage(in: result)
    #expect(
      said.contains("reading(of:from:checking:) leaked its continuation"),
      "the checked path must report the leak and name the bridge; the runtime said: \(said)")
  }

  @Test("reading(of:from:) with no setting checks, in the debug build the tests run")
  func readingChecksByDefault() async throws {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      let silent = SensorHub(script: .never)
      Task { _ = await reading(of: 1, from: silent) }
      try await untilTheHubDroppedItsCallback(silent)
    }
    let said = misuseMessage(in: result)
    #expect(
      said.contains("reading(of:from:checking:) leaked its continuation"),
      """
      reading(of:from:) called without a setting did not report a dropped continuation, so \
      its default is not checked in this debug build: the dashboard's calls use the \
      default, and it must be .standard, which checks wherever tests and development run; \
      the runtime said: \(said)
      """)
  }

  @Test("With checks off, the same leak goes unreported: that is what unchecked costs")
  func uncheckedIsSilent() async throws {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      let silent = SensorHub(script: .never)
      Task { _ = await reading(of: 1, from: silent, checking: .unchecked) }
      try await untilTheHubDroppedItsCallback(silent)
    }
    let said = misuseMessage(in: result)
    #expect(
      said == Self.silence,
      """
      reading(of:from:checking: .unchecked) still reported the leak, so the continuation it \
      used was a checked one: .unchecked must reach withBridgeContinuation, which then uses \
      withUnsafeContinuation; got: \(said)
      """)
  }

  @Test("Misuse messages name whichever bridge misused its continuation, not only reading")
  func messagesNameEachBridge() async throws {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      endThisChild(after: 1.5)
      let twiceAtOnce = SensorHub(script: CallbackScript(timing: .synchronously, times: 2))
      // Another bridge built on withBridgeContinuation, with a name of its own.
      _ = await calibration(of: twiceAtOnce)
    }
    let said = misuseMessage(in: result)
    #expect(
      said.contains("calibration(of:) tried to resume its continuation more than once"),
      Comment(
        rawValue: said == Self.silence
          ? "calibration(of:), a bridge built on withBridgeContinuation(.checked), let the hub "
            + "answer twice and nothing stopped it; the runtime said: \(said)"
          : "calibration(of:), a bridge built on withBridgeContinuation(.checked), resumed "
            + "twice, and the message named another function: withBridgeContinuation serves "
            + "every bridge, so the name in its messages must be the one its caller passes "
            + "in (`function`), not one written into the helper; the runtime said: \(said)"))
  }

  static let silence = "nothing about continuations"
  /// What the exit test's child prints when the hub's call returned after answering twice.
  static let callReturned = "the hub's call returned after answering twice"

  /// The runtime's continuation-misuse line from an exit test's standard error, without the
  /// "Fatal error" prefix, or ``silence``.
  func misuseMessage(in result: ExitTest.Result?) -> String {
    let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    for line in stderr.split(separator: "\n") {
      if let start = line.range(of: "SWIFT TASK CONTINUATION MISUSE") {
        return String(line[start.lowerBound...])
      }
    }
    return Self.silence
  }
}

/// Returns once `hub` has taken the read and dropped its callback (a `.never` script drops
/// it before `read` returns, which is when a checked continuation reports its leak), plus a
/// moment for the report to be written. Waits on the read, not on the machine's speed.
private func untilTheHubDroppedItsCallback(_ hub: SensorHub) async throws {
  let clock = ContinuousClock()
  let deadline = clock.now + .seconds(10)
  while hub.reads == 0 && clock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
  try await Task.sleep(for: .milliseconds(200))
}

/// A bridge other than reading(of:from:checking:) built on the same helper: misuse messages
/// must name it.
private func calibration(of hub: SensorHub) async -> Double {
  await withBridgeContinuation(.checked) { continuation in
    hub.read(channel: 2) { value in continuation.resume(returning: value) }
  }
}

/// Ends an exit test's child process with a failing status after `seconds`, from a thread
/// of its own, if it has not ended by then.
private func endThisChild(after seconds: Double) {
  Thread.detachNewThread {
    Thread.sleep(forTimeInterval: seconds)
    exit(70)
  }
}
