import Foundation

/// One compiler diagnostic with a location, e.g.
/// `/abs/Chapters/01-Callbacks/01-WarmUp.swift:3:3: error: cannot find 'valu' in scope`.
public struct Diagnostic: Equatable, Sendable {
  public enum Severity: String, Sendable { case error, warning }

  /// The path as the compiler printed it (absolute for SwiftPM builds).
  public var path: String
  public var line: Int
  public var column: Int
  public var severity: Severity
  public var message: String
  /// The source line, when the compiler printed it in its excerpt.
  public var sourceLine: String?

  public init(
    path: String, line: Int, column: Int, severity: Severity, message: String,
    sourceLine: String? = nil
  ) {
    self.path = path
    self.line = line
    self.column = column
    self.severity = severity
    self.message = message
    self.sourceLine = sourceLine
  }

  /// The diagnostic as the learner sees it: location and message, then the source line
  /// with a caret under the column (when known). `relativePath` replaces the path.
  public func rendered(relativePath: String) -> [String] {
    var lines = ["\(relativePath):\(line):\(column): \(severity.rawValue): \(message)"]
    if let sourceLine {
      let number = String(line)
      let gutter = String(repeating: " ", count: number.count)
      lines.append("  \(number) | \(sourceLine)")
      lines.append("  \(gutter) | \(String(repeating: " ", count: max(0, column - 1)))^")
    }
    return lines
  }
}

/// Reads `swift build` output.
public enum DiagnosticsParser {
  /// Every located diagnostic, in order, without duplicates (the compiler may report the
  /// same error twice, once per compile job).
  public static func parse(_ output: String) -> [Diagnostic] {
    let header =
      #/^(?<path>[^:\s][^:]*):(?<line>\d+):(?<column>\d+): (?<severity>error|warning): (?<message>.*)$/#
    let excerptRow = #/^\s*(?<number>\d+) \|(?: (?<text>.*))?$/#
    var diagnostics: [Diagnostic] = []
    var seen: Set<String> = []
    var current: Diagnostic?
    var currentKey = ""

    func flush() {
      if let diagnostic = current, seen.insert(currentKey).inserted {
        diagnostics.append(diagnostic)
      }
      current = nil
    }

    for rawLine in output.split(separator: "\n", omittingEmptySubsequences: false) {
      let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
      if let match = try? header.wholeMatch(in: line) {
        flush()
        let diagnostic = Diagnostic(
          path: String(match.output.path),
          line: Int(match.output.line) ?? 0,
          column: Int(match.output.column) ?? 0,
          severity: match.output.severity == "error" ? .error : .warning,
          message: String(match.output.message))
        current = diagnostic
        currentKey =
          "\(diagnostic.path):\(diagnostic.line):\(diagnostic.column):\(diagnostic.severity):\(diagnostic.message)"
        continue
      }
      guard current != nil else { continue }
      if let row = try? excerptRow.wholeMatch(in: line) {
        if current?.sourceLine == nil, Int(row.output.number) == current?.line {
          current?.sourceLine = row.output.text.map(String.init) ?? ""
        }
      } else if line.contains(" | ") || line.trimmingCharacters(in: .whitespaces).hasPrefix("|") {
        // The excerpt's marker rows ("   |   `- error: …"): part of the same diagnostic.
      } else {
        flush()
      }
    }
    flush()
    return diagnostics
  }

  /// `error:` lines without a source location (linker errors, driver errors), minus
  /// SwiftPM's "command failed" summaries, which only repeat that something failed.
  public static func unlocatedErrors(_ output: String) -> [String] {
    let located = #/^[^:\s][^:]*:\d+:\d+: /#
    var result: [String] = []
    for rawLine in output.split(separator: "\n") {
      let line = rawLine.trimmingCharacters(in: .whitespaces)
      guard line.contains("error:"), !line.contains("|") else { continue }
      if (try? located.prefixMatch(in: line)) != nil { continue }
      if line.contains("command failed with exit code") { continue }
      if !result.contains(line) { result.append(line) }
    }
    return result
  }

  /// Whether the build output has any `warning:` line.
  public static func hasWarnings(_ output: String) -> Bool {
    output.split(separator: "\n").contains { $0.contains("warning:") && !$0.contains("|") }
  }
}
