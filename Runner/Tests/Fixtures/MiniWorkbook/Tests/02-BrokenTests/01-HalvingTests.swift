import Testing

@testable import Broken

@Suite("2.1 Halving") struct HalvingTests {
  @Test func halvesTen() {
    #expect(half(10) == 5)
  }
}
