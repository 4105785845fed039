import Testing

@testable import Hostile

@Suite struct ChattyTests {
  @Test func answersAfterPrintingFortyMegabytes() {
    #expect(chatter(megabytes: 20) == 42)
  }
}
