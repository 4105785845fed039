import Testing

@testable import Broken

@Suite("2.2 Negating") struct NegatingTests {
  @Test func negatesTwo() {
    #expect(negate(2) == -2)
  }
}
