import Foundation
import LegacyKit
import Synchronization
import Testing
import WorkbookTesting

@testable import Callbacks

/// Collects what `encode(_:using:reportWarning:)` reports, from any thread.
private final class WarningLog: Sendable {
  private let entries = Mutex<[any Error]>([])

  /// The closure to pass as `reportWarning`.
  var report: @Sendable (any Error) -> Void {
    { error in self.entries.withLock { $0.append(error) } }
  }

  /// Everything reported so far, oldest first.
  var warnings: [any Error] {
    entries.withLock { $0 }
  }
}

/// A `reportWarning` that takes its time, and an encoder whose handler runs on a thread of its
/// own, 50 ms after the call: together they tell whether the warning that came with a value
/// was reported by the time `encode(_:using:reportWarning:)` returned.
///
/// A report made inside the encoder's handler is written down only after a second, or as
/// soon as `encode` has returned, whichever comes first: an `encode` that reports before
/// resuming waits for it, one that resumes first has returned before the warning is written
/// down, however fast the report would otherwise be. A report made by the caller's own task
/// (after the await, before returning) is written down at once. Any other report comes from
/// work left to run later (a task, a queue), and is marked as such.
private final class WarningProbe: Sendable {
  struct Entry: Sendable {
    var error: any Error
    var leftForLater: Bool
  }

  private let entries = Mutex<[Entry]>([])
  private let returned = Atomic<Bool>(false)
  private let handlerThread = Mutex<pthread_t?>(nil)
  private let callerTask = Mutex<Int?>(nil)

  /// Calls back on a thread of its own, 50 ms after the call.
  var script: CallbackScript {
    let scheduler = CallbackScheduler(name: "a thread of its own, after 50 ms") { work in
      Thread.detachNewThread {
        usleep(50_000)
        self.handlerThread.withLock { $0 = pthread_self() }
        work()
        self.handlerThread.withLock { $0 = nil }
      }
    }
    return CallbackScript(timing: .scheduled(scheduler))
  }

  /// The closure to pass as `reportWarning`.
  var report: @Sendable (any Error) -> Void {
    { error in
      let inHandler = self.handlerThread.withLock { thread in
        thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
      }
      let task = withUnsafeCurrentTask { $0?.hashValue }
      let byCaller = task != nil && task == self.callerTask.withLock { $0 }
      if inHandler {
        let patience = ContinuousClock.now.advanced(by: .seconds(1))
        while !self.returned.load(ordering: .sequentiallyConsistent),
          ContinuousClock.now < patience
        {
          usleep(2_000)
        }
      }
      self.entries.withLock {
        $0.append(Entry(error: error, leftForLater: !inHandler && !byCaller))
      }
    }
  }

  /// Call in the task that calls `encode`, just before calling it.
  func callerStarts() {
    let task = withUnsafeCurrentTask { $0?.hashValue }
    callerTask.withLock { $0 = task }
  }

  /// Call as soon as `encode` has returned; returns what had been reported by then.
  func reportsAtReturn() -> [Entry] {
    let reports = entries.withLock { $0 }
    returned.store(true, ordering: .sequentiallyConsistent)
    return reports
  }
}

/// The contract of `encode(_:using:reportWarning:)`: each path, what the caller sees, and the
/// test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | warnings reported | thread, timing |
/// | --- | --- | --- | --- |
/// | (value, nil) | the value: `valueAlone`; the empty line too, alone or with a warning: `emptyLineIsAValue` | none: `valueAlone` | inside the call, soon, later: `valueAlone` |
/// | (nil, error) | the error, unchanged: `errorAlone` | none: `errorAlone` | — |
/// | (value, error) | the value: `valueAndError` (an approximate match, and a service outage with a value) | the error, once: `valueAndError`; by the time the call returns, by the call itself: `warningReportedBeforeReturning` | — |
/// | (nil, nil) | `EmptyEncoderReply`: `neither` | — | — |
/// | answer on the caller's own thread, 0.5 s later | the value: `suspendsWhileWaiting` | — | suspends, neither blocks nor polls: `suspendsWhileWaiting` |
/// | asked again after an empty reply | the value: `reuse` | — | two requests: `reuse` |
/// | answer 2.5 s later | the value: `slowEncoderHoldsNoThread` | — | holds no thread of the pool while it waits, in any task: `slowEncoderHoldsNoThread` |
/// | never answered | — an `AddressEncoder` answers every request once; a continuation never resumed fails every test's deadline | | |
/// | two calls at once | — each call has a continuation of its own and shares nothing but the encoder | | |
/// | cancelled while it waits | the value or `CancellationError`, once, and nothing more when the answer comes: `cancelledWhileWaiting` | — | — |
/// | cancelled before, after | — as "while it waits": the encoder cannot cancel, so nothing differs | | |
@Suite("1.3 Optional pair")
struct OptionalPairTests {
  static let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(200))]

  static let address = "221b Baker Street, London"
  static let encoded = "221B-BAKER-STREET-LONDON"

  static let name = "encode(_:using:reportWarning:)"
  static let valueHint = "the (value, nil) case must resume(returning:) the value"
  static let errorHint = "the (nil, error) case must resume(throwing:) the error"
  static let bothHint = "the (value, error) case must resume(returning:) the value"
  static let neitherHint =
    "the (nil, nil) case never resumes; it must resume(throwing: EmptyEncoderReply())"

  @Test("Returns the value when the handler gets only a value", arguments: scripts)
  func valueAlone(script: CallbackScript) async throws {
    let encoder = AddressEncoder(reply: .value, script: script)
    let log = WarningLog()

    let result = try await withDeadline(
      .seconds(2), "encode(_:using:reportWarning:)", hint: Self.valueHint
    ) {
      try await encode(Self.address, using: encoder, reportWarning: log.report)
    }

    #expect(result == Self.encoded, "a value alone must be returned unchanged")
    #expect(log.warnings.isEmpty, "nothing went wrong, so there is nothing to report")
  }

  @Test(
    "An empty line is a value like any other, alone or with a warning",
    arguments: [AddressEncoder.Reply.value, .valueAndError(.approximateMatch)])
  func emptyLineIsAValue(reply: AddressEncoder.Reply) async throws {
    let encoder = AddressEncoder(reply: reply)
    let log = WarningLog()
    let hint = if case .value = reply { Self.valueHint } else { Self.bothHint }
    // The same reply for an address that is not empty: when that goes wrong too, the tests
    // of that reply name the cause, and this one has nothing to add.
    let usual = try? await withDeadline(.seconds(2), Self.name, hint: hint) {
      try await encode(Self.address, using: encoder, reportWarning: log.report)
    }
    guard usual == Self.encoded else { return }

    let outcome = await Result {
      try await withDeadline(.seconds(2), Self.name, hint: hint) {
        try await encode("", using: encoder, reportWarning: log.report)
      }
    }

    if case .failure(let error as DeadlineExceeded) = outcome { throw error }
    let thrown: (any Error)? = if case .failure(let error) = outcome { error } else { nil }
    #expect(
      thrown == nil && (try? outcome.get()) == "",
      """
      the encoder answered an empty address with the empty line "" and \
      encode(_:using:reportWarning:) \(thrown.map { "threw \($0)" } ?? "returned something else"): \
      "" is a value the encoder sent, not a missing one; only nil means no value
      """)
  }

  @Test("Throws the error when the handler gets only an error", arguments: scripts)
  func errorAlone(script: CallbackScript) async throws {
    let encoder = AddressEncoder(reply: .error(.unknownStreet), script: script)
    let log = WarningLog()

    await expectThrows(
      AddressEncodingError.unknownStreet, from: Self.name, hint: Self.errorHint,
      returned: { value in
        "encode(_:using:reportWarning:) returned \"\(value)\" although the encoder sent only "
          + "an error: throw that error"
      },
      wrongError: { error in
        "encode(_:using:reportWarning:) threw \(error), not the encoder's own error "
          + "unknownStreet: throw the error the handler received, unchanged"
      }
    ) {
      try await encode(Self.address, using: encoder, reportWarning: log.report)
    }
    #expect(log.warnings.isEmpty, "an error alone is thrown, not passed to reportWarning")
  }

  @Test(
    "Returns the value and reports the error when the handler gets both, whatever the error",
    arguments: scripts, [AddressEncodingError.approximateMatch, .serviceUnavailable])
  func valueAndError(script: CallbackScript, warning: AddressEncodingError) async throws {
    let encoder = AddressEncoder(reply: .valueAndError(warning), script: script)
    let log = WarningLog()

    let result: String
    do {
      result = try await withDeadline(.seconds(2), Self.name, hint: Self.bothHint) {
        try await encode(Self.address, using: encoder, reportWarning: log.report)
      }
    } catch is DeadlineExceeded {
      return
    } catch {
      Issue.record(
        """
        encode(_:using:reportWarning:) threw \(error) although a value came with it: when \
        both arrive, the value is returned and the error, whichever it is, is passed to \
        reportWarning
        """)
      return
    }

    #expect(result == Self.encoded, "a value came with the error, so it must be returned")
    #expect(
      log.warnings.count == 1,
      "the error that came with the value must be passed to reportWarning, once")
    #expect(
      log.warnings.first as? AddressEncodingError == warning,
      "reportWarning must receive the error that came with the value, unchanged")
  }

  @Test("The warning is reported by the time encode returns the value it came with")
  func warningReportedBeforeReturning() async throws {
    let probe = WarningProbe()
    let encoder = AddressEncoder(reply: .valueAndError(.approximateMatch), script: probe.script)

    let (result, reports) = try await withDeadline(.seconds(4), Self.name, hint: Self.bothHint) {
      probe.callerStarts()
      let result = try await encode(Self.address, using: encoder, reportWarning: probe.report)
      return (result, probe.reportsAtReturn())
    }

    #expect(result == Self.encoded, "a value came with the error, so it must be returned")
    #expect(
      reports.count == 1 && !reports.contains(where: \.leftForLater),
      """
      encode(_:using:reportWarning:) returned the value before the error that came with it \
      had been reported by the call itself (\(reports.count) warnings when it returned\
      \(reports.contains(where: \.leftForLater) ? ", reported from work left to run later" : "")\
      ): the report came only after the caller had been resumed, or from a task or queue \
      that runs whenever it gets to. A caller that reads the log right after the await must \
      find the warning there
      """)
  }

  @Test("Throws EmptyEncoderReply when the handler gets neither", arguments: scripts)
  func neither(script: CallbackScript) async throws {
    let encoder = AddressEncoder(reply: .neither, script: script)
    let log = WarningLog()

    await Self.expectEmptyReply {
      try await encode(Self.address, using: encoder, reportWarning: log.report)
    }
  }

  /// Checks that `operation` throws ``EmptyEncoderReply``.
  static func expectEmptyReply(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable () async throws -> String
  ) async {
    await expectThrows(
      EmptyEncoderReply(), from: name, hint: neitherHint,
      returned: { value in
        "encode(_:using:reportWarning:) returned \"\(value)\" although the encoder sent "
          + "neither a value nor an error: (nil, nil) must throw EmptyEncoderReply()"
      },
      wrongError: { error in
        "encode(_:using:reportWarning:) threw \(error) for (nil, nil); it must throw "
          + "EmptyEncoderReply()"
      },
      sourceLocation: sourceLocation, operation)
  }

  @Test("Suspends while it waits, so an answer delivered on its own thread can arrive")
  func suspendsWhileWaiting() async throws {
    let executor = OneThreadExecutor()
    let encoder = AddressEncoder(reply: .value, script: lateOnThreadOf(executor))
    let log = WarningLog()

    let result = try await expectSuspends(Self.name, hint: Self.valueHint, on: executor) {
      try await encode(Self.address, using: encoder, reportWarning: log.report)
    }

    #expect(result == Self.encoded, "a value alone must be returned unchanged")
  }

  @Test("The same encoder can be asked again after an empty reply")
  func reuse() async throws {
    let encoder = AddressEncoder(reply: .neither)
    let log = WarningLog()

    await Self.expectEmptyReply {
      try await encode(Self.address, using: encoder, reportWarning: log.report)
    }
    encoder.reply = .value
    let result = try await withDeadline(
      .seconds(2), "encode(_:using:reportWarning:)", hint: Self.valueHint
    ) {
      try await encode(Self.address, using: encoder, reportWarning: log.report)
    }

    #expect(result == Self.encoded)
    #expect(
      encoder.requestCount == 2,
      "two calls should ask the encoder twice, not \(encoder.requestCount) times")
  }

  @Test(
    "A call whose task is cancelled while it waits ends once, with the value or CancellationError")
  func cancelledWhileWaiting() async throws {
    let (script, delivered) = countedLater()
    let encoder = AddressEncoder(reply: .value, script: script)
    let log = WarningLog()

    let ending = try await endingOfACallCancelledWhileWaiting(
      Self.name, hint: Self.valueHint, asked: { encoder.requestCount > 0 },
      answered: { delivered.value > 0 }
    ) {
      try await encode(Self.address, using: encoder, reportWarning: log.report)
    }

    expectAnswerOrCancellation(
      ending, Self.encoded, called: "value", from: Self.name, while: "the encoder worked")
    #expect(log.warnings.isEmpty, "nothing went wrong, so there is nothing to report")
  }

  @Test("Suspends while a slow encoder works, holding no thread of the pool")
  func slowEncoderHoldsNoThread() async throws {
    let encoder = AddressEncoder(reply: .value, script: slowAnswer)
    let log = WarningLog()

    let result = try await expectHoldsNoThread(Self.name) {
      try await encode(Self.address, using: encoder, reportWarning: log.report)
    }

    #expect(result == Self.encoded, "a value alone must be returned unchanged")
  }
}
