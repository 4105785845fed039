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

/// SwiftPM compiles the manifest again whenever the build's environment differs from last
/// time's, so what make and the shell change between two checks is left out.
@Suite struct StableBuildEnvironmentTests {
  @Test func makeAndShellVariablesAreLeftOutOfTheBuild() {
    var request = BuildRequest(
      root: URL(fileURLWithPath: "/ROOT"), source: .learner, chapter: 2,
      scratchPath: ".build-learner")
    request.skippedFiles = ["Tests/02-DelegatesTests/01-ImagePickerTests.swift"]
    let environment = request.buildEnvironment
    for name in ["MAKEFLAGS", "MAKELEVEL", "EXERCISE", "CHAPTER", "OLDPWD", "WORKBOOK_MAKE"] {
      #expect(environment[name] == .some(nil), "\(name) must be removed, not inherited")
    }
    #expect(environment["WORKBOOK_CHAPTER"] == .some("2"))
    #expect(environment["WORKBOOK_TESTS_ONLY"] == .some("1"))
    #expect(
      environment["WORKBOOK_SKIP_FILES"]
        == .some("Tests/02-DelegatesTests/01-ImagePickerTests.swift"))
  }
}

/// What the status line shows while SwiftPM builds.
@Suite struct BuildProgressTests {
  @Test func showsTheStepCountAndTheModule() {
    let output = """
      Building for debugging...
      [3/40] Compiling LegacyKit Clock.swift
      [12/40] Compiling Callbacks 01-WarmUp.swift
      """
    #expect(BuildStep.lastStep(in: output) == "12/40 Compiling Callbacks")
    #expect(
      BuildStep.lastStep(in: "[40/40] Linking WorkbookPackageTests.xctest")
        == "40/40 Linking WorkbookPackageTests")
    #expect(BuildStep.lastStep(in: "[7/9]") == "7/9")
    #expect(BuildStep.lastStep(in: "Building for debugging...") == nil)
  }
}
