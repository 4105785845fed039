import Testing

@testable import Basics

@Suite("1.2 Doubling") struct DoublingTests {
  @Test func doublesZero() {
    #expect(double(0) == 0)
  }

  @Test func doublesFour() {
    #expect(double(4) == 8, "double(4) should be 8")
  }
}
