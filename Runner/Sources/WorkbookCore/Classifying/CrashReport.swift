import Foundation

/// What a test process's stderr says about how it died: the runtime's fatal-error message,
/// the crashed thread's backtrace (printed by the Swift backtracer), and whether the
/// backtrace is the Swift 6 isolation check.
public struct CrashReport: Sendable, Equatable {
  public struct Frame: Sendable, Equatable {
    public var symbol: String
    public var path: String?
    public var line: Int?
    public var column: Int?
  }

  /// The runtime's message without its `File.swift:NNN: Fatal error: ` prefix, e.g.
  /// "SWIFT TASK CONTINUATION MISUSE: twice() tried to resume its continuation more than
  /// once, returning 2!".
  public var fatalMessage: String?
  /// The backtracer's reason, e.g. "Illegal instruction".
  public var crashReason: String?
  /// The crashed thread's frames, innermost first.
  public var frames: [Frame] = []
  /// The runtime's "… leaked its continuation …" line, if it printed one.
  public var leakedContinuation: String?

  public init() {}

  /// Whether stderr shows a crash at all.
  public var showsCrash: Bool { fatalMessage != nil || crashReason != nil }

  /// The trap Swift 6 inserts where a closure isolated to an actor (usually the main
  /// actor) checks that it runs there: the backtrace goes through the executor check into
  /// `dispatch_assert_queue`, and no message is printed on Linux.
  public var isIsolationTrap: Bool {
    let markers = [
      "_dispatch_assert_queue_fail", "swift_task_isCurrentExecutor", "_swift_task_checkIsolated",
      "swift_task_reportUnexpectedExecutor",
    ]
    if frames.contains(where: { frame in markers.contains { frame.symbol.contains($0) } }) {
      return true
    }
    return fatalMessage?.contains("Incorrect actor executor assumption") ?? false
  }

  /// Whether libdispatch trapped because a `DispatchSemaphore` was freed while its count was
  /// below the value it was created with (more waits than signals). libdispatch prints
  /// nothing on Linux; its dispose function is the crashed thread's innermost frame.
  public var isSemaphoreFreedInUse: Bool {
    frames.first?.symbol.contains("_dispatch_semaphore_dispose") ?? false
  }

  /// Whether libdispatch trapped a `sync` onto the serial queue the calling code already runs
  /// on (the main queue from the main queue, say): a wait that could never end.
  public var isSyncOnItsOwnQueue: Bool {
    frames.first?.symbol.contains("__DISPATCH_WAIT_FOR_QUEUE__") ?? false
  }

  /// Whether libdispatch trapped because a dispatch object (a timer or another source, a
  /// queue) lost its last reference while suspended or never activated; libdispatch prints
  /// nothing on Linux, and its queue dispose function is the innermost frame.
  public var isReleasedWhileSuspended: Bool {
    frames.first?.symbol.contains("_dispatch_queue_xref_dispose") ?? false
  }

  /// Whether the runtime caught a continuation being resumed twice.
  public var isDoubleResume: Bool {
    fatalMessage?.contains("tried to resume its continuation more than once") ?? false
  }

  /// The first frame in a file under `folder` (an absolute path prefix).
  public func firstFrame(under folder: String) -> Frame? {
    let prefix = folder.hasSuffix("/") ? folder : folder + "/"
    return frames.first { $0.path?.hasPrefix(prefix) ?? false }
  }

  /// The innermost frame in the learner's code: in a file under one of `folders` (absolute
  /// path prefixes), or filed under no real file but with a symbol that names something
  /// `source` (the graded file's text, at absolute path `file`) declares; such a frame is
  /// given `file` as its path, without a line.
  ///
  /// The second kind is how the isolation trap shows when the trapping closure itself
  /// creates an escaping closure (`DispatchQueue.main.async { … }` or
  /// `Task { @MainActor in … }` in a main-actor callback): the check sits in the closure's
  /// prologue, which has no source line, and the compiler's line table files that code under
  /// `<stdin>` instead of the source file, so the backtrace names no file of the learner's.
  public func firstFrame(
    under folders: [String], orDeclaredIn source: String?, file: String
  )
    -> Frame?
  {
    let prefixes = folders.map { $0.hasSuffix("/") ? $0 : $0 + "/" }
    let declarations = source.map(Declarations.init)
    for frame in frames {
      if let path = frame.path {
        if prefixes.contains(where: { path.hasPrefix($0) }) { return frame }
      } else if let declarations, declarations.named(by: frame.symbol) {
        return Frame(symbol: frame.symbol, path: file)
      }
    }
    return nil
  }

  /// The names a Swift source file declares, to tell whether a backtrace symbol such as
  /// "closure #1 in closure #1 in StepsViewModel.refresh()" belongs to it.
  struct Declarations: Sendable, Equatable {
    /// Classes, structures, enumerations, actors and protocols.
    var types: Set<String> = []
    /// Types the file extends.
    var extended: Set<String> = []
    /// Functions and properties, at the top level or in a type.
    var members: Set<String> = []

    init(_ source: String) {
      let code = source.replacing(#///[^\n]*/#, with: "")
      let typeDeclaration =
        #/\b(?<keyword>class|struct|enum|actor|protocol|extension)\s+(?<name>[A-Za-z_][A-Za-z0-9_]*)/#
      for match in code.matches(of: typeDeclaration) {
        let name = String(match.output.name)
        guard !["func", "var", "let"].contains(name) else { continue }
        if match.output.keyword == "extension" {
          extended.insert(name)
        } else {
          self.types.insert(name)
        }
      }
      for match in code.matches(of: #/\b(?:func|var|let)\s+(?<name>[A-Za-z_][A-Za-z0-9_]*)/#) {
        members.insert(String(match.output.name))
      }
    }

    /// Whether `symbol` (a demangled name from a backtrace) names a type this file declares,
    /// a member of a type it extends, or a function of its own.
    func named(by symbol: String) -> Bool {
      let components = Self.qualifiedName(of: symbol)
      if components.contains(where: types.contains) { return true }
      if components.count == 1 { return members.contains(components[0]) }
      return components.indices.dropFirst().contains {
        members.contains(components[$0]) && extended.contains(components[$0 - 1])
      }
    }

    /// The dotted name a demangled symbol is about, split at the dots: ["StepsViewModel",
    /// "refresh"] for "closure #1 in closure #1 in StepsViewModel.refresh()" or "(1) suspend
    /// resume partial function for StepsViewModel.refresh()".
    static func qualifiedName(of symbol: String) -> [String] {
      var rest = Substring(symbol)
      let ends = [" in ", " for ", " of "].compactMap { symbol.range(of: $0, options: .backwards) }
      if let last = ends.map(\.upperBound).max() { rest = symbol[last...] }
      if rest.hasPrefix("static ") { rest = rest.dropFirst("static ".count) }
      let dotted = #/[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*/#
      guard let match = rest.prefixMatch(of: dotted) else { return [] }
      return match.output.split(separator: ".").map(String.init)
    }
  }

  public static func parse(_ stderr: String) -> CrashReport {
    var report = CrashReport()
    let frameLine =
      #/^\s*\d+\s+(?:\[[^\]]*\]\s+)*0x[0-9a-fA-F]+ (?<symbol>.+?)(?: \+ \d+)? in (?<image>\S+)(?: at (?<location>.+))?$/#
    let location = #/^(?<path>.+?)(?::(?<line>\d+)(?::(?<column>\d+))?)?$/#
    var inCrashedThread = false
    var sawCrashedThread = false
    var allFrames: [Frame] = []

    for rawLine in stderr.split(separator: "\n", omittingEmptySubsequences: false) {
      let line = String(rawLine)
      if report.fatalMessage == nil, let range = line.range(of: "Fatal error") {
        var message = line[range.upperBound...]
        if message.hasPrefix(":") { message = message.dropFirst() }
        let trimmed = message.trimmingCharacters(in: .whitespaces)
        report.fatalMessage = trimmed.isEmpty ? "Fatal error" : trimmed
      }
      if report.crashReason == nil, let range = line.range(of: "*** Program crashed: ") {
        var reason = String(line[range.upperBound...])
        if let at = reason.range(of: " at 0x") { reason = String(reason[..<at.lowerBound]) }
        reason = reason.replacingOccurrences(of: " ***", with: "")
        report.crashReason = reason.trimmingCharacters(in: .whitespaces)
      }
      if report.leakedContinuation == nil, line.contains("leaked its continuation") {
        report.leakedContinuation = line.trimmingCharacters(in: .whitespaces)
      }
      if line.hasPrefix("Thread ") {
        inCrashedThread = line.hasSuffix("crashed:")
        sawCrashedThread = sawCrashedThread || inCrashedThread
        continue
      }
      if line.hasPrefix("Registers:") || line.hasPrefix("Images") {
        inCrashedThread = false
        continue
      }
      guard let match = try? frameLine.wholeMatch(in: line) else { continue }
      var frame = Frame(symbol: String(match.output.symbol))
      if let at = match.output.location, let parts = try? location.wholeMatch(in: at) {
        let path = String(parts.output.path)
        // `//<compiler-generated>`, or `<stdin>` after the build's folder: no real file.
        let name = path.split(separator: "/").last ?? ""
        if !(name.hasPrefix("<") && name.hasSuffix(">")) {
          frame.path = path
          frame.line = parts.output.line.flatMap { Int($0) }
          frame.column = parts.output.column.flatMap { Int($0) }
        }
      }
      if inCrashedThread { report.frames.append(frame) }
      allFrames.append(frame)
    }
    if !sawCrashedThread { report.frames = allFrames }
    return report
  }

  /// A signal number in words.
  public static func signalName(_ signal: Int32) -> String {
    switch signal {
    case SIGILL: "SIGILL, illegal instruction: a Swift runtime trap"
    case SIGTRAP: "SIGTRAP: a Swift runtime trap"
    case SIGABRT: "SIGABRT: the program aborted"
    case SIGSEGV: "SIGSEGV: a bad memory access"
    case SIGBUS: "SIGBUS: a bad memory access"
    case SIGKILL: "SIGKILL: killed"
    default: "signal \(signal)"
    }
  }
}
