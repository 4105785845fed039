// swift-tools-version: 6.1
//
// A tiny workbook for the runner's golden tests. It follows the real workbook's
// conventions: WORKBOOK_SOURCE=solutions builds the chapter modules from Solutions/,
// WORKBOOK_CHAPTER=N includes only chapter N, WORKBOOK_SKIP_FILES leaves the listed files
// (exercise files and tests) out. Chapters/ holds a learner's work in progress with one
// exercise for each verdict the runner can give; in chapter 2, 2.1 does not compile and
// 2.3 uses 2.1's function.

import PackageDescription

let chapters: [(folder: String, module: String)] = [
  ("01-Basics", "Basics"),
  ("02-Broken", "Broken"),
]

let environment = Context.environment
let sourceRoot = environment["WORKBOOK_SOURCE"] == "solutions" ? "Solutions" : "Chapters"
let selected = chapters.filter { chapter in
  guard let wanted = environment["WORKBOOK_CHAPTER"].flatMap({ Int($0) }) else { return true }
  return Int(chapter.folder.prefix(2)) == wanted
}

let skippedFiles = (environment["WORKBOOK_SKIP_FILES"] ?? "").split(separator: ",")
func skippedFiles(under folder: String) -> [String] {
  skippedFiles.filter { $0.hasPrefix(folder + "/") }.map { String($0.dropFirst(folder.count + 1)) }
}

let package = Package(
  name: "MiniWorkbook",
  platforms: [.macOS(.v15)],
  targets: [
    .target(
      name: "MiniLegacy",
      path: "Support/MiniLegacy",
      swiftSettings: [.swiftLanguageMode(.v5)]
    ),
    .target(name: "MiniTesting", path: "Support/MiniTesting"),
  ]
    + selected.flatMap { chapter in
      [
        .target(
          name: chapter.module,
          dependencies: ["MiniLegacy"],
          path: "\(sourceRoot)/\(chapter.folder)",
          exclude: skippedFiles(under: "\(sourceRoot)/\(chapter.folder)")
        ),
        .testTarget(
          name: "\(chapter.module)Tests",
          dependencies: [.target(name: chapter.module), "MiniLegacy", "MiniTesting"],
          path: "Tests/\(chapter.folder)Tests",
          exclude: skippedFiles(under: "Tests/\(chapter.folder)Tests")
        ),
      ]
    },
  swiftLanguageModes: [.v6]
)
