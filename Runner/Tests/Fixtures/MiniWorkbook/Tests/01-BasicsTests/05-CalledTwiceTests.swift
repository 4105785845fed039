import MiniTesting
import Testing

@testable import Basics

@Suite("1.5 Called twice") struct CalledTwiceTests {
  @Test func resumesOnceWhenTheCallbackFiresTwice() async throws {
    let value = try await withDeadline(.seconds(1), "firstDelivery(2)", hint: "no path resumes") {
      await firstDelivery(2)
    }
    #expect(value == 2)
    // Give the second callback time to arrive.
    try await Task.sleep(for: .milliseconds(300))
  }
}
