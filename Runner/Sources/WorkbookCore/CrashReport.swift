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

  /// Whether the runtime caught a continuation being resumed twice.
  public var isDoubleResume: Bool {
    fatalMessage?.contains("tried to resume its continuation more than once") ?? false
  }

  /// The first frame in a file under `folder` (an absolute path prefix).
  public func firstFrame(under folder: String) -> Frame? {
    let prefix = folder.hasSuffix("/") ? folder : folder + "/"
    return frames.first { $0.path?.hasPrefix(prefix) ?? false }
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
        if !path.hasPrefix("//<") {
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
