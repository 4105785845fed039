import LegacyKit
import Testing
import WorkbookTesting

@testable import ExactlyOnce

extension PaymentBridgeTests {
  @Test("A checkout that allows no attempt at all is refused when it is made")
  func noAttemptAllowedIsRefused() async {
    // "At most maxAttempts attempts" cannot hold for 0: pay would still make its first
    // attempt. The checkout stops the program instead of charging anyone.
    let refusal: Comment = """
      Checkout(gateway:maxAttempts: 0) must stop the program: a payment allowed no attempt \
      would still make one and charge the card; keep the check on maxAttempts that \
      Checkout's init came with
      """
    await #expect(processExitsWith: .failure, refusal) {
      _ = Checkout(gateway: PaymentGateway(replies: [.approves()]), maxAttempts: 0)
    }
  }
}
