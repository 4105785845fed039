import Testing

@testable import Basics

@Suite("1.4 Blocking") struct BlockingTests {
  @Test func returnsOnceTheCallbackSignals() {
    #expect(blockingValue(4) == 4)
  }
}
