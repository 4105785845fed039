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
    "Returns the value and reports the error when the handler gets both", arguments: scripts)
  func valueAndError(script: CallbackScript) async throws {
    let encoder = AddressEncoder(reply: .valueAndError(.approximateMatch), script: script)
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
        both arrive, return the value and pass the error to reportWarning
        """)
      return
    }

    #expect(result == Self.encoded, "a value came with the error, so it must be returned")
    #expect(
      log.warnings.count == 1,
      "the error that came with the value must be passed to reportWarning, once")
    #expect(
      log.warnings.first as? AddressEncodingError == .approximateMatch,
      "reportWarning must receive the error that came with the value, unchanged")
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
}
