// swift-tools-version: 6.1
//
// A tiny workbook for the runner's `mistakes` tests: one chapter, two exercises, and the
// mistakes and alternatives in workbook.json (see MistakesTests.swift for what each shows).
// It follows the real workbook's conventions (WORKBOOK_SOURCE, WORKBOOK_CHAPTER).

import PackageDescription

let chapters: [(folder: String, module: String)] = [
  ("01-Basics", "Basics")
]

let environment = Context.environment
let sourceRoot = environment["WORKBOOK_SOURCE"] == "solutions" ? "Solutions" : "Chapters"
let selected = chapters.filter { chapter in
  guard let wanted = environment["WORKBOOK_CHAPTER"].flatMap({ Int($0) }) else { return true }
  return Int(chapter.folder.prefix(2)) == wanted
}

let package = Package(
  name: "VariantWorkbook",
  platforms: [.macOS(.v15)],
  targets: selected.flatMap { chapter in
    [
      .target(name: chapter.module, path: "\(sourceRoot)/\(chapter.folder)"),
      .testTarget(
        name: "\(chapter.module)Tests",
        dependencies: [.target(name: chapter.module)],
        path: "Tests/\(chapter.folder)Tests"
      ),
    ]
  },
  swiftLanguageModes: [.v6]
)
