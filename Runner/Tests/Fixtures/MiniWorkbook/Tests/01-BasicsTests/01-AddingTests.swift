import Testing

@testable import Basics

@Suite("1.1 Adding") struct AddingTests {
  @Test func addsTwoNumbers() {
    #expect(add(2, 3) == 5)
  }
}
