import Testing

@testable import Basics

@Suite struct DoublingTests {
  @Test func doublesPositiveAndNegativeNumbers() {
    #expect(double(2) == 4, "double(2) should be 4")
    #expect(double(-3) == -6, "negative numbers double too: double(-3) should be -6")
  }
}
