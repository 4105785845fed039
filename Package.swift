// swift-tools-version: 6.1
//
// The workbook package. Each chapter is one module whose sources come from either
// `Chapters/` (the learner's starters, the default) or `Solutions/` (the answers);
// one test target per chapter runs against whichever was chosen.
//
// Two environment variables steer it; the runner (`make check`, `make test`) sets them,
// each mode with its own scratch path so switching never forces a rebuild:
//
//   WORKBOOK_SOURCE=solutions   build the chapter modules from Solutions/
//   WORKBOOK_CHAPTER=3          include only chapter 3, so a compile error in one
//                               chapter cannot stop another from being graded
//
// Keep `chapters` in step with workbook.json; `make test` checks that they agree.

import PackageDescription

let chapters: [(folder: String, module: String)] = [
  ("01-Callbacks", "Callbacks"),
  ("02-Delegates", "Delegates"),
  ("03-ExactlyOnce", "ExactlyOnce"),
]

let environment = Context.environment
let sourceRoot = environment["WORKBOOK_SOURCE"] == "solutions" ? "Solutions" : "Chapters"
let selected = chapters.filter { chapter in
  guard let wanted = environment["WORKBOOK_CHAPTER"].flatMap({ Int($0) }) else { return true }
  return Int(chapter.folder.prefix(2)) == wanted
}

let package = Package(
  name: "Workbook",
  platforms: [.macOS(.v15)],
  targets: [
    // Simulated legacy frameworks, written the way pre-concurrency code was: Swift 5 mode.
    .target(
      name: "LegacyKit",
      path: "Support/LegacyKit",
      swiftSettings: [.swiftLanguageMode(.v5)]
    ),
    // Deadlines and helpers shared by every chapter's tests.
    .target(
      name: "WorkbookTesting",
      path: "Support/WorkbookTesting"
    ),
  ]
    + selected.flatMap { chapter in
      [
        .target(
          name: chapter.module,
          dependencies: ["LegacyKit"],
          path: "\(sourceRoot)/\(chapter.folder)"
        ),
        .testTarget(
          name: "\(chapter.module)Tests",
          dependencies: [.target(name: chapter.module), "LegacyKit", "WorkbookTesting"],
          path: "Tests/\(chapter.folder)Tests"
        ),
      ]
    },
  swiftLanguageModes: [.v6]
)
