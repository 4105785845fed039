import Testing

@testable import Basics

@Suite("1.7 Tripling") struct TriplingTests {
  @Test func triplesTwo() {
    #expect(triple(2) == 6)
  }
}
