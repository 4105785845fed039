import Foundation

/// One `swift build --build-tests` of the workbook package.
public struct BuildRequest: Sendable {
  public var root: URL
  public var source: SourceTree
  /// Only this chapter (`WORKBOOK_CHAPTER`), or all chapters when `nil`.
  public var chapter: Int?
  /// The scratch path, relative to the root (`.build-learner`, `.build-solutions`), or
  /// absolute.
  public var scratchPath: String
  /// Extra `swift build` arguments, e.g. `-Xswiftc -warnings-as-errors`.
  public var extraArguments: [String]
  /// Files (relative to the root) to leave out of the build: the files and tests of
  /// exercises whose file is missing or does not compile (`WORKBOOK_SKIP_FILES`,
  /// comma-separated; the manifest excludes them).
  public var skippedFiles: [String] = []
  /// Sources (absolute paths) to compile again whatever changed, so that their warnings are
  /// printed: their objects are deleted before the build.
  public var recompiledSources: [String] = []
  /// The chapter modules' language mode, when not the package's Swift 6: 5 builds them as
  /// legacy code (`WORKBOOK_LANGUAGE_MODE`), which Chapter 10's starters must compile as.
  public var languageMode: Int?
  /// False: the modules only, not the test targets (no `--build-tests`).
  public var buildsTests = true
  /// True: the build runs at the lowest CPU priority (`nice -n 19`), so that test processes
  /// running beside it get the processors whenever they need them.
  public var lowPriority = false

  public init(
    root: URL, source: SourceTree, chapter: Int?, scratchPath: String,
    extraArguments: [String] = []
  ) {
    self.root = root
    self.source = source
    self.chapter = chapter
    self.scratchPath = scratchPath
    self.extraArguments = extraArguments
  }

  /// The manifest reads these; each mode keeps its own scratch path. Grading the learner's
  /// files needs only the tests, so the executables (Chapter 8's `chat-server` and
  /// `clipper`) are left out of those builds; the solutions' builds keep them, so that
  /// `verify` still compiles them.
  public var environment: [String: String?] {
    [
      "WORKBOOK_SOURCE": source == .solutions ? "solutions" : nil,
      "WORKBOOK_TESTS_ONLY": source == .learner ? "1" : nil,
      "WORKBOOK_CHAPTER": chapter.map(String.init),
      "WORKBOOK_LANGUAGE_MODE": languageMode.map(String.init),
      "WORKBOOK_SKIP_FILES": skippedFiles.isEmpty
        ? nil : skippedFiles.sorted().joined(separator: ","),
    ]
  }

  /// What `swift build` runs with: ``environment``, without the variables that change from
  /// one call to the next but mean nothing to the build. SwiftPM reuses its compiled
  /// manifest only when the whole environment is the same as last time, and compiling it
  /// again costs about a second on every check: make passes its command line on
  /// (`EXERCISE=1.2` differs from `EXERCISE=1.3`, `MAKEFLAGS`), and the shell its `OLDPWD`.
  public var buildEnvironment: [String: String?] {
    var result = environment
    for name in Self.volatileVariables { result[name] = .some(nil) }
    return result
  }

  /// Removed from the build's environment (see ``buildEnvironment``); the manifest reads
  /// none of them.
  static let volatileVariables = [
    "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "MAKE_TERMOUT", "MAKE_TERMERR",
    "MAKE_RESTARTS", "CHAPTER", "EXERCISE", "ALL", "LIMIT", "WRITE", "QUICK", "RUNS", "NAME",
    "SOURCE", "PORT",
    "WORKBOOK_MAKE", "WORKBOOK_LONG_TESTS", "WORKBOOK_EXPLAIN", "NO_COLOR", "OLDPWD", "PWD",
    "_", "SHLVL", "COLUMNS", "LINES",
  ]

  /// True when the build is a plain debug build for this machine, whose products SwiftPM
  /// puts in `<scratch>/debug`; false when the extra arguments choose another
  /// configuration, triple or SDK.
  var usesDefaultDestination: Bool {
    !extraArguments.contains {
      ["-c", "--configuration", "--triple", "--swift-sdk", "--sdk"].contains($0)
        || $0.hasPrefix("--configuration=") || $0.hasPrefix("--triple=")
        || $0.hasPrefix("--swift-sdk=")
    }
  }

  var scratchURL: URL {
    scratchPath.hasPrefix("/")
      ? URL(fileURLWithPath: scratchPath) : root.appendingPathComponent(scratchPath)
  }
}

public struct BuildResult: Sendable {
  public var succeeded: Bool
  /// stdout and stderr together.
  public var output: String
  public var diagnostics: [Diagnostic]
  /// The built test product (`<Package>PackageTests.xctest`), when the build succeeded.
  public var testProduct: URL?
}

/// Runs the build and finds the test product.
public enum BuildStep {
  public static func run(
    _ request: BuildRequest, status: ((String) -> Void)? = nil
  ) throws(WorkbookError) -> BuildResult {
    let result = try runOnce(request, status: status)
    // A scratch folder built at another path (the workbook was moved or copied) fails with
    // stale module caches; it is the runner's own folder, so start it afresh once.
    if !result.succeeded, result.output.contains("was compiled with module cache path") {
      try? FileManager.default.removeItem(at: request.scratchURL)
      return try runOnce(request, status: status)
    }
    return result
  }

  static func runOnce(
    _ request: BuildRequest, status: ((String) -> Void)?
  ) throws(WorkbookError) -> BuildResult {
    guard let swift = ChildProcess.which("swift") else {
      throw .failure("cannot find `swift` on PATH")
    }
    let arguments =
      ["build"] + (request.buildsTests ? ["--build-tests"] : [])
      + ["--package-path", request.root.path, "--scratch-path", request.scratchURL.path]
      + request.extraArguments
    // The driver can miss a changed file and link an old object (see StaleObjects).
    if request.usesDefaultDestination {
      StaleObjects.removeObjectsOfChangedSources(scratch: request.scratchURL)
      StaleObjects.removeObjects(of: request.recompiledSources, scratch: request.scratchURL)
    }
    var executable = swift
    var argumentsRun = arguments
    if request.lowPriority, let nice = ChildProcess.which("nice") {
      executable = nice
      argumentsRun = ["-n", "19", swift] + arguments
    }
    let outcome = try ChildProcess.run(
      executable, argumentsRun, environment: request.buildEnvironment, in: request.root
    ) { stdout in
      if let status, let step = lastStep(in: stdout) { status(step) }
    }
    if outcome.succeeded, request.usesDefaultDestination {
      StaleObjects.record(scratch: request.scratchURL)
    }
    let output = outcome.stdout + (outcome.stderr.isEmpty ? "" : "\n" + outcome.stderr)
    var result = BuildResult(
      succeeded: outcome.succeeded, output: output,
      diagnostics: DiagnosticsParser.parse(output), testProduct: nil)
    // A build without the tests has no test product to find.
    guard outcome.succeeded, request.buildsTests else { return result }

    // SwiftPM links `<scratch>/debug` to the folder of a default debug build (for example
    // `x86_64-unknown-linux-gnu/debug`); asking it with `--show-bin-path` would cost a
    // second start of SwiftPM (about half a second) on every check.
    var folder = request.scratchURL.appendingPathComponent("debug")
    if !request.usesDefaultDestination || testProduct(in: folder) == nil {
      let binPath = try ChildProcess.run(
        swift,
        [
          "build", "--show-bin-path", "--package-path", request.root.path,
          "--scratch-path", request.scratchURL.path,
        ] + request.extraArguments,
        environment: request.buildEnvironment, in: request.root)
      folder = URL(
        fileURLWithPath: binPath.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    result.testProduct = testProduct(in: folder)
    if result.testProduct == nil {
      result.succeeded = false
      result.output += "\nerror: no *PackageTests.xctest in \(folder.path)"
    }
    return result
  }

  /// The most recently built `*PackageTests.xctest` in `folder`.
  static func testProduct(in folder: URL) -> URL? {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    let candidates = names.filter { $0.hasSuffix("PackageTests.xctest") }.map {
      folder.appendingPathComponent($0)
    }
    return candidates.max { lhs, rhs in
      modificationDate(lhs) < modificationDate(rhs)
    }
  }

  static func modificationDate(_ url: URL) -> Date {
    let attributes = try? FileManager.default.attributesOfItem(atPath: url.path)
    return attributes?[.modificationDate] as? Date ?? .distantPast
  }

  /// The last step SwiftPM printed, as "12/40 Compiling Callbacks": its step count and
  /// what it was doing, with the module's name but not the files.
  static func lastStep(in output: String) -> String? {
    guard
      let match = output.matches(of: #/\[(\d+)/(\d+)\](?: ([A-Za-z]+)(?: ([A-Za-z0-9_-]+))?)?/#)
        .last
    else { return nil }
    let action = [match.output.3, match.output.4].compactMap { $0 }.joined(separator: " ")
    return "\(match.output.1)/\(match.output.2)" + (action.isEmpty ? "" : " \(action)")
  }
}
