import Dispatch
import Foundation
import Synchronization

/// Where output goes and how it looks: colour only when stdout is a terminal and
/// `NO_COLOR` is unset or empty; progress only when stderr is a terminal; file paths as
/// links (OSC 8) only when stdout is a terminal that is not `TERM=dumb`.
public struct Terminal: Sendable {
  public var color: Bool
  public var progress: Bool
  public var hyperlinks: Bool

  public init(color: Bool, progress: Bool, hyperlinks: Bool = false) {
    self.color = color
    self.progress = progress
    self.hyperlinks = hyperlinks
  }

  /// The settings for this process.
  public static func current(
    environment: [String: String] = ProcessInfo.processInfo.environment
  )
    -> Terminal
  {
    let noColor = !(environment["NO_COLOR"] ?? "").isEmpty
    return Terminal(
      color: isatty(STDOUT_FILENO) == 1 && !noColor,
      progress: isatty(STDERR_FILENO) == 1,
      hyperlinks: isatty(STDOUT_FILENO) == 1 && environment["TERM"] != "dumb")
  }

  /// `text` with every path of a workbook Swift file in it (`Chapters/…/X.swift`, with a
  /// `:LINE` if it has one) made a link to the file under `root`, when links are on.
  public func linkingPaths(in text: String, root: URL) -> String {
    guard hyperlinks else { return text }
    return text.replacing(
      /(?:Chapters|Solutions|Tests|Support)\/[A-Za-z0-9_\-.\/]+\.swift(?::\d+)?/
    ) {
      match in
      let shown = String(match.output)
      let path = shown.split(separator: ":").first.map(String.init) ?? shown
      let url = "file://" + root.appendingPathComponent(path).path
      return "\u{1B}]8;;\(url)\u{1B}\\\(shown)\u{1B}]8;;\u{1B}\\"
    }
  }

  public enum Color: String, Sendable {
    case red = "31"
    case green = "32"
    case yellow = "33"
    case magenta = "35"
    case cyan = "36"
    case bold = "1"
    case dim = "2"
  }

  public func paint(_ text: String, _ color: Color) -> String {
    self.color ? "\u{1B}[\(color.rawValue)m\(text)\u{1B}[0m" : text
  }

  public func paint(_ text: String, for verdict: Verdict) -> String {
    switch verdict {
    case .passed: paint(text, .green)
    case .notStarted: paint(text, .dim)
    case .failed, .doesNotCompile: paint(text, .red)
    case .neverResumed: paint(text, .yellow)
    case .crashed: paint(text, .magenta)
    }
  }
}

/// A one-line status on stderr ("building chapter 1… 12/40 Compiling Callbacks"), rewritten
/// in place and erased when done, when stderr is a terminal. When it is not (a pipe, an
/// editor's task, CI) and `plain` is set, a long wait still shows: the newest status as a
/// plain line, at most every ``plainInterval`` seconds, the first after that long.
public final class StatusLine: Sendable {
  private let enabled: Bool
  private let plain: Bool
  private let shown = Mutex(false)
  private let lastPlain: Mutex<DispatchTime>
  public static let plainInterval = 10.0

  public init(enabled: Bool, plain: Bool = false) {
    self.enabled = enabled
    self.plain = plain && !enabled
    lastPlain = Mutex(DispatchTime.now())
  }

  public func show(_ text: String) {
    if plain {
      let now = DispatchTime.now()
      let due = lastPlain.withLock { last in
        guard Double(now.uptimeNanoseconds - last.uptimeNanoseconds) / 1e9 >= Self.plainInterval
        else { return false }
        last = now
        return true
      }
      if due { FileHandle.standardError.write(Data("\(text)\n".utf8)) }
      return
    }
    guard enabled else { return }
    shown.withLock { shown in
      FileHandle.standardError.write(Data("\r\u{1B}[2K\(text)".utf8))
      shown = true
    }
  }

  public func clear() {
    guard enabled else { return }
    shown.withLock { shown in
      if shown { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
      shown = false
    }
  }
}

/// Writing to stdout and stderr.
public enum Output {
  public static func out(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
  }

  public static func err(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
  }
}
