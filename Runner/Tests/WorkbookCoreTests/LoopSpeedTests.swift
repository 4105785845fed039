import Foundation
import Testing

@testable import WorkbookCore

/// The shortcuts that keep a learner's check quick (issue 12, "Speed of the loop").
@Suite struct LoopSpeedTests {
  func request(_ extra: [String]) -> BuildRequest {
    BuildRequest(
      root: URL(fileURLWithPath: "/ROOT"), source: .learner, chapter: 1,
      scratchPath: ".build-learner", extraArguments: extra)
  }

  /// The test product is looked up in `<scratch>/debug` (no second start of SwiftPM) only
  /// for a plain debug build; any other configuration or destination asks SwiftPM.
  @Test func theBinPathIsGuessedOnlyForAPlainDebugBuild() {
    #expect(request([]).usesDefaultDestination)
    #expect(request(["-Xswiftc", "-warnings-as-errors"]).usesDefaultDestination)
    #expect(!request(["-c", "release"]).usesDefaultDestination)
    #expect(!request(["--configuration=release"]).usesDefaultDestination)
    #expect(!request(["--triple", "aarch64-unknown-linux-gnu"]).usesDefaultDestination)
    #expect(!request(["--swift-sdk=x86_64-swift-linux-musl"]).usesDefaultDestination)
  }

  /// Grading runs the short form of the stress tests; `verify` and `mistakes` the long one.
  @Test func onlyVerifyAndMistakesAskForTheLongForm() {
    #expect(!GraderOptions(root: URL(fileURLWithPath: "/ROOT")).longTests)
    #expect(TestLauncher.longTestsKey == "WORKBOOK_LONG_TESTS")
  }
}
