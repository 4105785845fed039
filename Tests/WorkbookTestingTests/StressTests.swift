import Foundation
import Testing

@testable import WorkbookTesting

/// The short form when grading, the long form when `workbook verify` or `mistakes` runs the
/// tests (`WORKBOOK_LONG_TESTS=1`).
@Suite struct StressTests {
  @Test func theAmountFollowsTheForm() {
    let asked = ProcessInfo.processInfo.environment["WORKBOOK_LONG_TESTS"] == "1"
    #expect(longTests == asked)
    #expect(stressAmount(grading: 1_500, verify: 6_000) == (asked ? 6_000 : 1_500))
    let limit: Duration = stressAmount(grading: .milliseconds(750), verify: .seconds(3))
    #expect(limit == (asked ? .seconds(3) : .milliseconds(750)))
  }
}
