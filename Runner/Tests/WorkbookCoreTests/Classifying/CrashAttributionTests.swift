import Foundation
import Testing

@testable import WorkbookCore

/// The isolation trap in a handler that hops to the main queue itself (exercise 1.6's
/// `DispatchQueue.main.async { … }` inside the callback): the compiler files the closure's
/// frame under `<stdin>`, not the learner's file, so the verdict has to find the learner's
/// code by the frame's symbol. `isolation-trap-main-async.*` was captured from the workbook
/// itself (Swift 6.3.1, Linux, the runner's backtrace setting, the root replaced by `/ROOT`
/// as in the other samples) with `isolation-trap-main-async.swift.txt` as the learner's file.
@Suite struct CrashAttributionTests {
  static let file = "Chapters/01-Callbacks/06-MainActorIsolation.swift"

  /// A workbook root holding just the learner's file that crashed.
  static func root(source: String) throws -> URL {
    let root = try Fixtures.temporaryFolder()
    let url = root.appendingPathComponent(file)
    try FileManager.default.createDirectory(
      at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try source.write(to: url, atomically: true, encoding: .utf8)
    return root
  }

  static func context(root: URL) -> GradingContext {
    GradingContext(
      root: root.path, sourceFolder: "Chapters", suite: "MainActorIsolationTests",
      testModule: "CallbacksTests", untouchedStarter: false, file: file)
  }

  @Test func namesTheLearnersClosureWhenTheBacktraceFilesItUnderStdin() throws {
    let root = try Self.root(
      source: try Fixtures.sample("isolation-trap-main-async.swift.txt"))
    defer { try? FileManager.default.removeItem(at: root) }
    let grade = Classifier.grade(
      try Fixtures.run("isolation-trap-main-async", termination: .signalled(4)),
      Self.context(root: root))
    #expect(grade.verdict == .crashed)
    #expect(
      grade.details == [
        "the runtime stopped the tests: a closure isolated to the main actor was called on a background thread (Swift 6 checks isolation at run time)",
        "while running one of these tests: test \"refresh() returns only once the count is on screen, even when it arrives late\", test \"refresh() leaves the main actor free while it waits for the count\", test \"refresh() shows today's count wherever the pedometer calls back\" and 1 more",
        "at Chapters/01-Callbacks/06-MainActorIsolation.swift (in closure #1 in closure #1 in StepsViewModel.refresh())",
        "this usually means a main-actor closure ran on a background thread",
      ])
  }

  @Test func readsACompilerInventedFileAsNoFile() throws {
    let report = CrashReport.parse(try Fixtures.sample("isolation-trap-main-async.stderr.txt"))
    #expect(report.isIsolationTrap)
    #expect(report.firstFrame(under: "/ROOT/Chapters") == nil)
    let closure = try #require(report.frames.first { $0.symbol.contains("StepsViewModel") })
    #expect(closure.symbol == "closure #1 in closure #1 in StepsViewModel.refresh()")
    #expect(closure.path == nil)
    let thunk = try #require(report.frames.first { $0.symbol.hasPrefix("thunk for") })
    #expect(thunk.path == nil)
  }

  @Test func attributesAFrameWithoutAFileByTheNamesTheLearnersFileDeclares() throws {
    let report = CrashReport.parse(try Fixtures.sample("isolation-trap-main-async.stderr.txt"))
    let source = try Fixtures.sample("isolation-trap-main-async.swift.txt")
    let file = "/ROOT/\(Self.file)"
    let frame = report.firstFrame(under: ["/ROOT/Chapters"], orDeclaredIn: source, file: file)
    #expect(
      frame
        == CrashReport.Frame(
          symbol: "closure #1 in closure #1 in StepsViewModel.refresh()", path: file))
    // Another exercise's file declares nothing the backtrace names; without the file's
    // text there is nothing to go by.
    #expect(
      report.firstFrame(
        under: ["/ROOT/Chapters"], orDeclaredIn: "struct Doubling {}\nfunc double() {}",
        file: file) == nil)
    #expect(report.firstFrame(under: ["/ROOT/Chapters"], orDeclaredIn: nil, file: file) == nil)
  }

  @Test func stillPrefersTheInnermostFrameInTheLearnersFolder() throws {
    let report = CrashReport.parse(try Fixtures.sample("isolation-trap.stderr.txt"))
    let frame = report.firstFrame(
      under: ["/ROOT/Chapters"], orDeclaredIn: "final class Model {}", file: "/ROOT/Other.swift")
    #expect(frame?.path == "/ROOT/Chapters/01-Basics/06-MainActorModel.swift")
    #expect(frame?.symbol == "closure #1 in Model.load()")
  }

  @Test(arguments: [
    ("closure #1 in closure #1 in StepsViewModel.refresh()", true),
    ("(1) suspend resume partial function for StepsViewModel.refresh()", true),
    ("implicit closure #2 in StepsViewModel.init(counter:)", true),
    ("StepsViewModel.steps.getter : Swift.Int?", true),
    ("closure #1 in StepCounter.fetchTodaysSteps(completion:)", false),
    ("closure #1 in StepCounter.shown(_:)", true),
    ("closure #1 in format(_:)", true),
    ("closure #1 in fetchTodaysSteps(completion:)", false),
    ("thunk for @escaping @callee_guaranteed @Sendable () -> ()", false),
    ("swift_task_isCurrentExecutorWithFlags", false),
  ])
  func tellsWhichSymbolsTheFileDeclares(symbol: String, declared: Bool) {
    let declarations = CrashReport.Declarations(
      """
      // A class Comment in a comment declares nothing.
      @MainActor
      final class StepsViewModel {
        private let counter: StepCounter
        class func make() -> StepsViewModel { fatalError() }
      }
      extension StepCounter {
        func shown(_ steps: Int) -> String { format(steps) }
      }
      func format(_ steps: Int) -> String { "\\(steps)" }
      """)
    #expect(declarations.types == ["StepsViewModel"])
    #expect(declarations.extended == ["StepCounter"])
    #expect(declarations.members == ["counter", "make", "shown", "format"])
    #expect(declarations.named(by: symbol) == declared)
  }
}
