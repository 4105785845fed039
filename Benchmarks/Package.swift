// swift-tools-version: 6.1
//
// Benchmarks for the workbook, in a package of their own so the workbook itself stays
// dependency-free and its tests never time anything. Always build in release mode; from
// the workbook's root, `make bench` builds them, runs them and writes RESULTS.md.
//
//   bench          one executable, one table: channel throughput (the solution's Channel
//                  against AsyncChannel and AsyncStream), continuation cost (checked
//                  against unsafe), the solution's Promise, the migration payoff
//                  (coroutine threads against tasks), and the learner's loop
//
// The code under test is the workbook's own, never a copy: Sources/bench/Channel.swift and
// Sources/bench/Promise.swift are relative symbolic links to the solutions' files, and
// Sources/CoroutineKit links to Support/CoroutineKit. Their types are internal, so they are
// compiled into the benchmark's own module.

import PackageDescription

let package = Package(
  name: "Benchmarks",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4")
  ],
  targets: [
    // The legacy coroutine library, as the workbook builds it: Swift 5 mode.
    .target(
      name: "CoroutineKit",
      path: "Sources/CoroutineKit",
      swiftSettings: [.swiftLanguageMode(.v5)]
    ),
    .executableTarget(
      name: "bench",
      dependencies: [
        "CoroutineKit",
        .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
      ],
      path: "Sources/bench"
    ),
  ],
  swiftLanguageModes: [.v6]
)
