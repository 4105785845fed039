// swift-tools-version: 6.1
//
// A one-chapter workbook for the runner's robustness tests: an exercise that passes, one
// whose test prints tens of megabytes, one whose test never ends (and starts a helper
// process in a group of its own, as compiler jobs are), and one whose starter the tests
// delete. It follows the real workbook's conventions: WORKBOOK_CHAPTER=N includes only
// chapter N, WORKBOOK_SKIP_FILES leaves the listed test files out.

import PackageDescription

let environment = Context.environment
let skippedTests = (environment["WORKBOOK_SKIP_FILES"] ?? "").split(separator: ",")
let testFolder = "Tests/01-HostileTests"
let chapterSelected = environment["WORKBOOK_CHAPTER"].flatMap { Int($0) }.map { $0 == 1 } ?? true

let package = Package(
  name: "HostileWorkbook",
  platforms: [.macOS(.v15)],
  targets: chapterSelected
    ? [
      .target(name: "Hostile", path: "Chapters/01-Hostile"),
      .testTarget(
        name: "HostileTests",
        dependencies: ["Hostile"],
        path: testFolder,
        exclude: skippedTests.filter { $0.hasPrefix(testFolder + "/") }.map {
          String($0.dropFirst(testFolder.count + 1))
        }
      ),
    ] : [],
  swiftLanguageModes: [.v6]
)
