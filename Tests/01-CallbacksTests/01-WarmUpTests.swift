import LegacyKit
import Testing
import WorkbookTesting

@testable import Callbacks

@Suite("1.1 Warm-up")
struct WarmUpTests {
  /// Synchronously inside the call, soon from another thread, and late from another thread.
  static let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(200))]

  static let hint =
    "greeting(for:from:) must resume its continuation inside the completion handler, "
    + "with the greeting the handler receives"

  @Test("Returns the greeting the completion handler receives", arguments: scripts)
  func returnsTheGreeting(script: CallbackScript) async throws {
    let greeter = Greeter(script: script)

    let received = try await withDeadline(.seconds(2), "greeting(for:from:)", hint: Self.hint) {
      await greeting(for: "Ada", from: greeter)
    }

    #expect(received == "Hello, Ada!")
  }

  @Test("Asks the greeter exactly once per call", arguments: scripts)
  func asksOnce(script: CallbackScript) async throws {
    let greeter = Greeter(script: script)

    _ = try await withDeadline(.seconds(2), "greeting(for:from:)", hint: Self.hint) {
      await greeting(for: "Ada", from: greeter)
    }

    #expect(greeter.requestCount == 1)
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

    #expect(first == "Hello, Ada!")
    #expect(second == "Hello, Grace!")
    #expect(greeter.requestCount == 2)
  }
}
