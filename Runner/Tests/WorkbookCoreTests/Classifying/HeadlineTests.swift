import Foundation
import Testing

@testable import WorkbookCore

/// Which finding headlines a verdict when a suite saw several: the most specific one, the
/// same on every run.
@Suite struct HeadlineTests {
  static let main = "/ROOT/Tests/01-BasicsTests/02-DoublingTests.swift"
  static let stress = "/ROOT/Tests/01-BasicsTests/02-DoublingStress.swift"

  /// A log with the suite declared in `main` and one test per entry: (name, file, line).
  func log(
    tests: [(String, String, Int)], issues: [(String, [TestEventLog.Message])]
  )
    -> TestEventLog
  {
    var events = TestEventLog()
    events.tests["BasicsTests.DoublingTests"] = TestEventLog.Test(
      id: "BasicsTests.DoublingTests", name: "DoublingTests", kind: "suite", line: 5)
    for (name, _, line) in tests {
      events.tests[name] = TestEventLog.Test(
        id: name, name: name, kind: "function", line: line)
      events.started.append(name)
      events.ended.insert(name)
    }
    events.issues = issues.map { name, messages in
      let test = tests.first { $0.0 == name }!
      return TestEventLog.Issue(
        testID: name, messages: messages, filePath: test.1, line: test.2 + 1, column: 5)
    }
    events.runEnded = true
    return events
  }

  func grade(_ events: TestEventLog) -> Grade {
    Classifier.grade(
      SuiteRun(outcome: ProcessOutcome(termination: .exited(1)), events: events),
      sampleContext())
  }

  static func bare(_ text: String) -> [TestEventLog.Message] { [.init(symbol: "fail", text: text)] }
  static func explained(_ text: String, _ why: String) -> [TestEventLog.Message] {
    [.init(symbol: "fail", text: text), .init(symbol: "details", text: why)]
  }

  @Test func aTestThatNamesItsCauseHeadlinesOverAnEarlierBareExpectation() {
    let events = log(
      tests: [("first()", Self.main, 10), ("second()", Self.main, 40)],
      issues: [
        ("second()", Self.explained("Expectation failed: count == 1", "resumed twice")),
        ("first()", Self.bare("Expectation failed: (total → 3) == 4")),
      ])
    let details = grade(events).details
    #expect(details.first == "test second() at Tests/01-BasicsTests/02-DoublingTests.swift:41")
    #expect(details.contains("resumed twice"))
  }

  @Test func aBareStressFailureDeclaredHigherUpDoesNotHideAnExplainedTest() {
    let events = log(
      tests: [("stress()", Self.stress, 3), ("precise()", Self.main, 80)],
      issues: [
        ("stress()", Self.bare("Expectation failed: (problems → [\"round 3\"]).isEmpty")),
        ("precise()", Self.explained("Expectation failed: order", "the second value came first")),
      ])
    #expect(grade(events).details.contains("the second value came first"))
  }

  @Test func anExplainedStressFailureDeclaredHigherUpComesAfterAnExplainedPreciseTest() {
    let events = log(
      tests: [("stress()", Self.stress, 3), ("precise()", Self.main, 80)],
      issues: [
        ("stress()", Self.explained("Expectation failed: problems", "round 3: lost 2 of 40")),
        ("precise()", Self.explained("Expectation failed: drained", "close() dropped the buffer")),
      ])
    let details = grade(events).details
    #expect(details.first == "test precise() at Tests/01-BasicsTests/02-DoublingTests.swift:81")
    #expect(details.contains("close() dropped the buffer"))
  }

  @Test func anEarlierFailureInTheSameTestHeadlinesOverItsDeadline() {
    let events = log(
      tests: [("waits()", Self.main, 10)],
      issues: [
        ("waits()", Self.explained("Expectation failed: thread", "called back on the main thread")),
        ("waits()", Self.explained("Issue recorded", "Never resumed: double(_:) did not return")),
      ])
    let result = grade(events)
    #expect(result.verdict == .failed)
    #expect(result.details.dropFirst().first == "Expectation failed: thread")
    #expect(
      result.details.last
        == "after that, the test's wait did not end either: double(_:) did not return")
  }

  @Test func aDeadlineAloneOrAfterABareExpectationIsStillNeverResumed() {
    let events = log(
      tests: [("waits()", Self.main, 10)],
      issues: [
        ("waits()", Self.bare("Expectation failed: (x → 1) == 2")),
        ("waits()", Self.explained("Issue recorded", "Never resumed: double(_:) did not return")),
      ])
    let result = grade(events)
    #expect(result.verdict == .neverResumed)
    #expect(result.details.first == "Never resumed: double(_:) did not return")
  }

  @Test func aFailureAfterTheDeadlineDoesNotReplaceIt() {
    let events = log(
      tests: [("waits()", Self.main, 10)],
      issues: [
        ("waits()", Self.explained("Issue recorded", "Never resumed: double(_:) did not return")),
        ("waits()", Self.explained("Expectation failed: count", "no value arrived")),
      ])
    #expect(grade(events).verdict == .neverResumed)
  }

  @Test func theHeadlineDoesNotDependOnTheOrderTestsRecordedIn() {
    let tests = [("a()", Self.main, 10), ("b()", Self.main, 20)]
    let one = log(
      tests: tests,
      issues: [
        ("b()", Self.explained("Expectation failed: b", "b's cause")),
        ("a()", Self.explained("Expectation failed: a", "a's cause")),
      ])
    let other = log(
      tests: tests,
      issues: [
        ("a()", Self.explained("Expectation failed: a", "a's cause")),
        ("b()", Self.explained("Expectation failed: b", "b's cause")),
      ])
    #expect(grade(one).details == grade(other).details)
    #expect(grade(one).details.contains("a's cause"))
  }
}
