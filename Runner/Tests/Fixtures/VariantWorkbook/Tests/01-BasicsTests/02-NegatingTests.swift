import Testing

@testable import Basics

@Suite struct NegatingTests {
  @Test func negates() {
    #expect(negate(5) == -5, "negate(5) should be -5: the sign must flip")
  }
}
