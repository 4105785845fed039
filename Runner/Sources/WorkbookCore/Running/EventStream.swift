import Foundation

/// What a Swift Testing run reported through `--event-stream-output-path`
/// (`--event-stream-version 0`): JSON lines of `{"kind":"test",…}` records and
/// `{"kind":"event",…}` events.
public struct TestEventLog: Sendable, Equatable {
  public struct Test: Sendable, Equatable {
    public var id: String
    public var name: String
    public var displayName: String?
    /// "suite" or "function".
    public var kind: String
    /// The line of the test's declaration, to order tests as they appear in the file.
    public var line: Int?

    /// The name the learner recognises: the display name if there is one.
    public var title: String { displayName ?? name }

    /// `test "Display name"` or `test name()`.
    public var quoted: String { displayName.map { "test \"\($0)\"" } ?? "test \(name)" }
  }

  public struct Message: Sendable, Equatable {
    /// "fail", "details", "pass", "default", …
    public var symbol: String
    public var text: String
  }

  public struct Issue: Sendable, Equatable {
    public var testID: String?
    public var messages: [Message]
    public var filePath: String?
    public var line: Int?
    public var column: Int?

    /// Every message's text, in order.
    public var texts: [String] { messages.map(\.text) }

    /// True when the test explained the failure in its own words (a comment, shown as
    /// "details"), rather than only Swift Testing's "Expectation failed: a == b".
    public var namesCause: Bool { messages.contains { $0.symbol == "details" } }
  }

  /// Test records by id.
  public var tests: [String: Test] = [:]
  /// Ids of tests (suites and functions) in the order they started.
  public var started: [String] = []
  public var ended: Set<String> = []
  /// Issues in the order they were recorded; known issues and warnings are left out.
  public var issues: [Issue] = []
  public var runEnded = false

  public init() {}

  /// How many test functions started.
  public var functionsStarted: Int {
    started.filter { tests[$0]?.kind == "function" || isFunctionID($0) }.count
  }

  /// The test functions that started and never ended, in the order they started: the ones
  /// running at a crash or at the time limit. Tests run in parallel, so there may be several.
  public var runningTests: [Test] {
    started.filter { id in
      !ended.contains(id) && (tests[id].map { $0.kind == "function" } ?? isFunctionID(id))
    }.map {
      tests[$0] ?? Test(id: $0, name: Self.functionName(fromID: $0), kind: "function")
    }
  }

  /// Names the running tests for a verdict's details: "<what> test X", or, when tests ran in
  /// parallel, "<what> one of these tests: X, Y".
  public func describeRunningTests(_ what: String) -> String? {
    let running = runningTests
    switch running.count {
    case 0: return nil
    case 1: return "\(what) \(running[0].quoted)"
    default:
      // Name a few; a whole suite's worth of names would bury the rest of the verdict.
      let shown = running.prefix(3).map(\.quoted).joined(separator: ", ")
      let more = running.count > 3 ? " and \(running.count - 3) more" : ""
      return "\(what) one of these tests: \(shown)\(more)"
    }
  }

  /// The issues ordered by where their test is declared (then by when they were
  /// recorded): tests run in parallel, so the order of recording varies between runs.
  public var issuesInSourceOrder: [Issue] {
    issues.enumerated().sorted { lhs, rhs in
      let left = test(lhs.element.testID)?.line ?? Int.max
      let right = test(rhs.element.testID)?.line ?? Int.max
      return left != right ? left < right : lhs.offset < rhs.offset
    }.map(\.element)
  }

  /// The issues in the order their findings should headline a verdict: an issue that
  /// names its cause (the test's own comment) before a bare "Expectation failed", then one
  /// of a precise test before one of a stress test (a file whose name says `Stress`: many
  /// rounds of random traffic, whose findings say what went wrong but seldom why), then by
  /// where the test is declared, and within one test by when it was recorded (its first
  /// failure explains the later ones). Never by recording order across tests: tests run
  /// in parallel, so that order varies between runs.
  public var issuesByHeadline: [Issue] {
    func rank(_ issue: Issue) -> (Int, Int, Int) {
      let file = issue.filePath.map { ($0 as NSString).lastPathComponent } ?? ""
      return (
        issue.namesCause ? 0 : 1, file.contains("Stress") ? 1 : 0,
        test(issue.testID)?.line ?? Int.max
      )
    }
    return issues.enumerated().sorted { lhs, rhs in
      let left = rank(lhs.element)
      let right = rank(rhs.element)
      return left != right ? left < right : lhs.offset < rhs.offset
    }.map(\.element)
  }

  /// The issues recorded before `issue` in the same test, oldest first.
  public func earlierIssues(inTestOf issue: Issue) -> [Issue] {
    guard let index = issues.firstIndex(of: issue) else { return [] }
    return issues[..<index].filter { $0.testID == issue.testID }
  }

  public func test(_ id: String?) -> Test? {
    guard let id else { return nil }
    return tests[id] ?? Test(id: id, name: Self.functionName(fromID: id), kind: "function")
  }

  private func isFunctionID(_ id: String) -> Bool { id.contains("/") }

  /// `Module.Suite/name()/File.swift:10:2` → `name()`.
  static func functionName(fromID id: String) -> String {
    let parts = id.split(separator: "/")
    return parts.count >= 2 ? String(parts[1]) : id
  }
}

/// Parses event-stream JSON lines; lines it cannot read (e.g. the last one, cut short by a
/// crash) are skipped.
public enum EventStreamParser {
  public static func parse(_ text: String) -> TestEventLog {
    var log = TestEventLog()
    for line in text.split(separator: "\n") where !line.isEmpty {
      guard
        let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
        let kind = object["kind"] as? String,
        let payload = object["payload"] as? [String: Any]
      else { continue }
      switch kind {
      case "test":
        guard let id = payload["id"] as? String else { continue }
        log.tests[id] = TestEventLog.Test(
          id: id,
          name: payload["name"] as? String ?? TestEventLog.functionName(fromID: id),
          displayName: payload["displayName"] as? String,
          kind: payload["kind"] as? String ?? "function",
          line: (payload["sourceLocation"] as? [String: Any])?["line"] as? Int)
      case "event":
        record(event: payload, in: &log)
      default:
        continue
      }
    }
    return log
  }

  private static func record(event payload: [String: Any], in log: inout TestEventLog) {
    let testID = payload["testID"] as? String
    switch payload["kind"] as? String {
    case "testStarted":
      if let testID { log.started.append(testID) }
    case "testEnded":
      if let testID { log.ended.insert(testID) }
    case "runEnded":
      log.runEnded = true
    case "issueRecorded":
      let issue = payload["issue"] as? [String: Any] ?? [:]
      if issue["isKnown"] as? Bool == true { return }
      if let severity = issue["severity"] as? String, severity != "error" { return }
      let location =
        issue["sourceLocation"] as? [String: Any] ?? payload["_sourceLocation"] as? [String: Any]
      let messages = (payload["messages"] as? [[String: Any]] ?? []).compactMap {
        message -> TestEventLog.Message? in
        guard let text = message["text"] as? String else { return nil }
        return TestEventLog.Message(symbol: message["symbol"] as? String ?? "", text: text)
      }
      log.issues.append(
        TestEventLog.Issue(
          testID: testID,
          messages: messages,
          filePath: location?["_filePath"] as? String ?? location?["filePath"] as? String,
          line: location?["line"] as? Int,
          column: location?["column"] as? Int))
    default:
      return
    }
  }
}
