import Testing

@testable import Hostile

@Suite struct AddingTests {
  @Test func addsTwoAndThree() {
    #expect(add(2, 3) == 5)
  }
}
