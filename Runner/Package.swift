// swift-tools-version: 6.1
//
// The grading runner, `workbook`. A package of its own so it builds and runs even when
// the learner's chapters do not compile; it never depends on chapter code or solutions.
// Foundation and Dispatch only: no package dependencies.

import PackageDescription

let package = Package(
  name: "WorkbookRunner",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "workbook", targets: ["workbook"])
  ],
  targets: [
    // Everything the runner does, as small testable types.
    .target(name: "WorkbookCore"),
    // The command-line entry point: parses arguments and calls into WorkbookCore.
    .executableTarget(name: "workbook", dependencies: ["WorkbookCore"]),
    // Unit tests, plus golden tests that run the built `workbook` on Tests/Fixtures.
    .testTarget(
      name: "WorkbookCoreTests",
      dependencies: ["WorkbookCore", "workbook"],
      path: "Tests/WorkbookCoreTests"
    ),
  ],
  swiftLanguageModes: [.v6]
)
