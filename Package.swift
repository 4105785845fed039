// swift-tools-version: 6.2
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
//                               chapter cannot stop another from being graded;
//                               0 includes none (`make test` builds the support
//                               targets and their own tests that way)
//   WORKBOOK_SKIP_FILES=Chapters/01-Callbacks/05-KeepBothAPIs.swift,Tests/01-…/05-…
//                               leave these files (exercise files and their tests) out:
//                               the runner sets it when an exercise's file is missing
//                               or does not compile, so the chapter's other exercises
//                               can still be graded
//   WORKBOOK_LANGUAGE_MODE=5    build the chapter modules in the Swift 5 language mode:
//                               `make verify` proves that Chapter 10's starters, legacy
//                               code that stops compiling in Swift 6, build that way
//   WORKBOOK_TESTS_ONLY=1       leave out the executables (chat-server, clipper), which
//                               no test uses: the runner sets it when it grades the
//                               learner's files, so a save in Chapter 8 relinks only
//                               the tests (`make verify` still builds them, from Solutions/)
//
// The support targets (Support/) are always included; their own tests (CoroutineKitTests,
// ChatKitTests, HTTPTestServerTests, WorkbookTestingTests) only when no single chapter is chosen, so grading a chapter never builds
// (or trips over) them.
//
// Keep `chapters` in step with workbook.json; `make test` checks that they agree.

import PackageDescription

/// Each chapter, with the legacy modules its code and tests use: only those are built when
/// a single chapter is graded, so a learner's first check compiles no more than it needs.
let chapters: [(folder: String, module: String, uses: [String])] = [
  ("01-Callbacks", "Callbacks", ["LegacyKit"]),
  ("02-Delegates", "Delegates", ["LegacyKit"]),
  ("03-ExactlyOnce", "ExactlyOnce", ["LegacyKit"]),
  ("04-Streams", "Streams", ["LegacyKit"]),
  ("05-Futures", "Futures", ["CoroutineKit", "LegacyKit"]),
  ("06-Channels", "Channels", ["CoroutineKit"]),
  ("07-Structured", "Structured", ["CoroutineKit", "LegacyKit"]),
  ("08-Capstone", "Capstone", ["ChatKit"]),
  ("09-Networking", "Networking", ["HTTPTestServer"]),
  ("10-MakeItCompile", "MakeItCompile", ["LegacyKit"]),
]

/// Exercises that need module settings of their own live in a subfolder of their chapter,
/// built as a module of its own; the chapter's tests use it too. 10.6 is code of a module
/// that adopts Swift 6.2's approachable concurrency: the main actor as the default isolation,
/// and async functions that run on their caller's actor (`nonisolated(nonsending)`).
let submodules: [String: [(folder: String, module: String, settings: [SwiftSetting])]] = [
  "10-MakeItCompile": [
    (
      "Approachable", "ApproachableConcurrency",
      [
        .defaultIsolation(MainActor.self),
        .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
      ]
    )
  ]
]

let environment = Context.environment
let sourceRoot = environment["WORKBOOK_SOURCE"] == "solutions" ? "Solutions" : "Chapters"
let wantedChapter = environment["WORKBOOK_CHAPTER"].flatMap { Int($0) }
let selected = chapters.filter { chapter in
  wantedChapter.map { Int(chapter.folder.prefix(2)) == $0 } ?? true
}
let skippedFiles = (environment["WORKBOOK_SKIP_FILES"] ?? "").split(separator: ",")
/// The skipped files under `folder`, relative to it (as `exclude:` wants them).
func skippedFiles(under folder: String) -> [String] {
  skippedFiles.filter { $0.hasPrefix(folder + "/") }.map { String($0.dropFirst(folder.count + 1)) }
}
/// With no single chapter chosen, every support module and its own tests are built.
let allSupport = wantedChapter == nil || wantedChapter == 0
/// The executables are left out when only the tests are wanted.
let testsOnly = environment["WORKBOOK_TESTS_ONLY"] == "1"
/// The chapter modules' language mode: Swift 6 unless the runner asks for Swift 5.
let chapterSettings: [SwiftSetting] =
  environment["WORKBOOK_LANGUAGE_MODE"] == "5" ? [.swiftLanguageMode(.v5)] : []
/// LegacyKit and WorkbookTesting (which uses it) are always built; the others on demand.
func needed(_ module: String) -> Bool {
  allSupport || selected.contains { $0.uses.contains(module) }
}
let supportTests: [Target] =
  allSupport
  ? [
    .testTarget(
      name: "CoroutineKitTests",
      dependencies: ["CoroutineKit", "WorkbookTesting"],
      path: "Tests/CoroutineKitTests"
    ),
    .testTarget(
      name: "WorkbookTestingTests",
      dependencies: ["LegacyKit", "WorkbookTesting"],
      path: "Tests/WorkbookTestingTests"
    ),
    .testTarget(
      name: "ChatKitTests",
      dependencies: ["ChatKit", "WorkbookTesting"],
      path: "Tests/ChatKitTests"
    ),
    .testTarget(
      name: "HTTPTestServerTests",
      dependencies: ["HTTPTestServer", "WorkbookTesting"],
      path: "Tests/HTTPTestServerTests"
    ),
  ] : []

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
      dependencies: ["LegacyKit"],
      path: "Support/WorkbookTesting"
    ),
  ]
    // A coroutine-era futures and channels library (Chapters 5 to 7 migrate away from it),
    // also legacy code: Swift 5 mode.
    + (needed("CoroutineKit")
      ? [
        .target(
          name: "CoroutineKit",
          path: "Support/CoroutineKit",
          swiftSettings: [.swiftLanguageMode(.v5)]
        )
      ] : [])
    // The capstone's chat server and its legacy delegate-based client (Chapter 8 bridges
    // the client); POSIX sockets and Dispatch sources, no package dependency. `make server`
    // runs the chat server on 127.0.0.1.
    + (needed("ChatKit")
      ? [
        .target(
          name: "ChatKit",
          path: "Support/ChatKit",
          exclude: ["README.md"],
          swiftSettings: [.swiftLanguageMode(.v5)]
        )
      ] : [])
    + (needed("ChatKit") && !testsOnly
      ? [
        .executableTarget(
          name: "chat-server",
          dependencies: ["ChatKit"],
          path: "Support/ChatServerMain"
        )
      ] : [])
    // Chapter 9's scriptable HTTP server on 127.0.0.1 (slow, truncated, dropped, 500s);
    // POSIX sockets and threads, no package dependency.
    + (needed("HTTPTestServer")
      ? [
        .target(
          name: "HTTPTestServer",
          path: "Support/HTTPTestServer",
          exclude: ["README.md"],
          swiftSettings: [.swiftLanguageMode(.v5)]
        )
      ] : [])
    + supportTests
    + selected.flatMap { chapter -> [Target] in
      let folder = "\(sourceRoot)/\(chapter.folder)"
      // A submodule holds one exercise: when its file is left out (it does not compile),
      // the module is left out whole, since a target needs a source.
      let subs = (submodules[chapter.folder] ?? []).filter { sub in
        !skippedFiles.contains { $0.hasPrefix("\(folder)/\(sub.folder)/") }
      }
      return [
        .target(
          name: chapter.module,
          dependencies: chapter.uses.map { .target(name: $0) },
          path: folder,
          exclude: skippedFiles(under: folder)
            + (submodules[chapter.folder] ?? []).map(\.folder),
          swiftSettings: chapterSettings
        ),
        .testTarget(
          name: "\(chapter.module)Tests",
          dependencies: [.target(name: chapter.module), "WorkbookTesting"]
            + subs.map { .target(name: $0.module) }
            + chapter.uses.map { .target(name: $0) },
          path: "Tests/\(chapter.folder)Tests",
          exclude: skippedFiles(under: "Tests/\(chapter.folder)Tests")
        ),
      ]
        + subs.map { sub in
          .target(
            name: sub.module,
            dependencies: chapter.uses.map { .target(name: $0) },
            path: "\(folder)/\(sub.folder)",
            exclude: skippedFiles(under: "\(folder)/\(sub.folder)"),
            // Legacy (WORKBOOK_LANGUAGE_MODE=5): the module as it was before it adopted
            // the settings, in the package's Swift 6 mode.
            swiftSettings: environment["WORKBOOK_LANGUAGE_MODE"] == "5" ? [] : sub.settings
          )
        }
    }
    // `make clipper NAME=…`: Chapter 8's command, a thin main over the Capstone module.
    + (selected.contains { $0.module == "Capstone" } && !testsOnly
      ? [
        .executableTarget(
          name: "clipper",
          dependencies: ["Capstone"],
          path: "Support/ClipperMain"
        )
      ] : []),
  swiftLanguageModes: [.v6]
)
