// swift-tools-version: 6.1
//
// Benchmarks for the workbook, in a package of their own so the workbook itself stays
// dependency-free and its tests never time anything. Build in release mode; from the
// workbook's root, `make bench` builds and runs them.
//
//   continuation-cost   what one bridge (await + resume) costs with a checked and with an
//                       unsafe continuation, side by side (exercise 3.3)

import PackageDescription

let package = Package(
  name: "Benchmarks",
  platforms: [.macOS(.v15)],
  targets: [
    .executableTarget(
      name: "continuation-cost",
      path: "Sources/continuation-cost"
    )
  ],
  swiftLanguageModes: [.v6]
)
