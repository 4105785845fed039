import Testing

@testable import Hostile

@Suite struct EndlessTests {
  @Test func getsAnAnswer() {
    #expect(waitForAnswer() == 1)
  }
}
