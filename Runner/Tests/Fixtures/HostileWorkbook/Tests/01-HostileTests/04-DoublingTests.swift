import Testing

@testable import Hostile

@Suite struct DoublingTests {
  @Test func doublesFour() {
    #expect(double(4) == 8)
  }
}
