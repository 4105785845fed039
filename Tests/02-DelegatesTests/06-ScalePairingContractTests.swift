import LegacyKit
import Testing
import WorkbookTesting

@testable import Delegates

private let bathroomScale = PairedScale(name: "Bathroom scale", serialNumber: "BS-0815")

extension ScalePairingTests {
  @Test(
    "Stops listening before the caller goes on: no delegate of the pairing is left on the session")
  func letsGoOfTheSessionBeforeTheCallerGoesOn() async throws {
    let gate = CallbackGate()
    let session = ScalePairingSession(outcome: .pairs(bathroomScale), script: gate.script)
    let outcome = try await delegateAtResume(
      of: { try await pairScale(session, code: "0815", progress: { _ in }) }, gate: gate,
      delegate: { session.delegate },
      started: "pairScale(_:code:progress:) did not start the pairing",
      name: "pairScale(_:code:progress:)",
      hint: "didPair must resume the stored continuation; is your delegate still alive? The "
        + "session holds it weakly, so a delegate nothing else holds is gone before the scale "
        + "answers")
    let scale = outcome.value
    #expect(
      scale == bathroomScale,
      "pairScale returned \(scale), not the scale the session paired with, \(bathroomScale)")
    #expect(
      outcome.resumed,
      "pairScale returned without ever suspending and being resumed: it waited by holding its thread (a semaphore or another blocking wait) instead of suspending until the session reports"
    )
    let seen = outcome.delegate
    #expect(
      seen == "none",
      """
      when pairScale returned, the session's delegate was still \(seen), set by this \
      pairing: the session goes on reporting to it (a repeated outcome, a failure after the \
      pairing) after the caller has its answer, until the object happens to be freed. A \
      pairing is done with the session when it answers: it must stop listening before its \
      caller goes on, and leave alone a delegate someone else has set since
      """)
  }
}
