import Testing

@testable import Broken

@Suite("2.3 Quartering") struct QuarteringTests {
  @Test func quartersTwenty() {
    #expect(quarter(20) == 5)
  }
}
