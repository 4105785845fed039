import Testing

@testable import Basics

@Suite("1.6 Main-actor model") struct MainActorModelTests {
  @Test @MainActor func loadsTheValue() async throws {
    let model = Model()
    model.load()
    try await Task.sleep(for: .milliseconds(500))
    #expect(model.value == 3)
  }
}
