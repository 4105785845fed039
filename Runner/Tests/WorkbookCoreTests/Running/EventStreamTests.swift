import Testing

@testable import WorkbookCore

@Suite struct EventStreamTests {
  @Test func readsTestsAndIssuesOfAFailedRun() throws {
    let log = EventStreamParser.parse(try Fixtures.sample("failed.events.jsonl"))
    #expect(log.functionsStarted == 2)
    #expect(log.runEnded)
    #expect(log.issues.count == 1)
    let issue = try #require(log.issues.first)
    #expect(issue.texts == ["Expectation failed: (double(4) → 12) == 8", "double(4) should be 8"])
    #expect(issue.filePath == "/ROOT/Tests/01-BasicsTests/02-DoublingTests.swift")
    #expect(issue.line == 11)
    #expect(log.test(issue.testID)?.title == "doublesFour()")
    #expect(log.runningTests.isEmpty)
    #expect(log.describeRunningTests("while running") == nil)
  }

  @Test func namesTheTestThatWasRunningAtACrash() throws {
    let log = EventStreamParser.parse(try Fixtures.sample("double-resume.events.jsonl"))
    #expect(!log.runEnded)
    #expect(log.runningTests.map(\.name) == ["resumesOnceWhenTheCallbackFiresTwice()"])
    #expect(
      log.describeRunningTests("while running")
        == "while running test resumesOnceWhenTheCallbackFiresTwice()")
  }

  @Test func readsTheDeadlineComment() throws {
    let log = EventStreamParser.parse(try Fixtures.sample("deadline.events.jsonl"))
    #expect(log.issues.count == 2)
    #expect(log.issues[0].texts.last?.hasPrefix("Never resumed: deliveredValue(5)") == true)
  }

  @Test func skipsLinesItCannotRead() {
    let text = """
      {"kind":"event","payload":{"kind":"testStarted","testID":"M.S/t()/F.swift:1:1"}}
      {"kind":"event","payload":{"kind":"issueRec
      """
    let log = EventStreamParser.parse(text)
    #expect(log.functionsStarted == 1)
    #expect(log.issues.isEmpty)
    #expect(log.runningTests.map(\.name) == ["t()"])
  }

  @Test func namesEveryTestStillRunningWhenTestsRanInParallel() {
    let text = """
      {"kind":"event","payload":{"kind":"testStarted","testID":"M.S"}}
      {"kind":"event","payload":{"kind":"testStarted","testID":"M.S/a()/F.swift:1:1"}}
      {"kind":"event","payload":{"kind":"testStarted","testID":"M.S/b()/F.swift:5:1"}}
      {"kind":"event","payload":{"kind":"testStarted","testID":"M.S/c()/F.swift:9:1"}}
      {"kind":"event","payload":{"kind":"testEnded","testID":"M.S/b()/F.swift:5:1"}}
      """
    let log = EventStreamParser.parse(text)
    #expect(log.runningTests.map(\.name) == ["a()", "c()"])
    #expect(
      log.describeRunningTests("while running")
        == "while running one of these tests: test a(), test c()")
  }

  @Test func ignoresKnownIssuesAndWarnings() {
    let text = """
      {"kind":"event","payload":{"kind":"issueRecorded","issue":{"isKnown":true},"messages":[]}}
      {"kind":"event","payload":{"kind":"issueRecorded","issue":{"isKnown":false,"severity":"warning"},"messages":[]}}
      """
    #expect(EventStreamParser.parse(text).issues.isEmpty)
  }
}

@Suite struct IssueOrderTests {
  @Test func ordersIssuesByWhereTheirTestIsDeclared() {
    let text = """
      {"kind":"test","payload":{"id":"M.S/late()/F.swift:30:4","kind":"function","name":"late()","sourceLocation":{"line":30}}}
      {"kind":"test","payload":{"id":"M.S/early()/F.swift:10:4","kind":"function","name":"early()","displayName":"An early test","sourceLocation":{"line":10}}}
      {"kind":"event","payload":{"kind":"issueRecorded","testID":"M.S/late()/F.swift:30:4","issue":{},"messages":[{"symbol":"fail","text":"late"}]}}
      {"kind":"event","payload":{"kind":"issueRecorded","testID":"M.S/early()/F.swift:10:4","issue":{},"messages":[{"symbol":"fail","text":"early"}]}}
      """
    let log = EventStreamParser.parse(text)
    #expect(log.issues.map(\.texts) == [["late"], ["early"]])
    #expect(log.issuesInSourceOrder.map(\.texts) == [["early"], ["late"]])
    #expect(log.test("M.S/early()/F.swift:10:4")?.quoted == #"test "An early test""#)
    #expect(log.test("M.S/late()/F.swift:30:4")?.quoted == "test late()")
  }
}
