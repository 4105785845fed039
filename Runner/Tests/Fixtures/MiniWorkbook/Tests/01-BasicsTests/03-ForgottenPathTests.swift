import MiniTesting
import Testing

@testable import Basics

@Suite("1.3 Forgotten path") struct ForgottenPathTests {
  @Test func returnsTheDeliveredValue() async throws {
    let value = try await withDeadline(
      .seconds(1), "deliveredValue(5)", hint: "small values never reach resume(returning:)"
    ) {
      await deliveredValue(5)
    }
    #expect(value == 5)
  }
}
