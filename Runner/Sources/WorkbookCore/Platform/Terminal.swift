import Dispatch
import Foundation
import Synchronization

/// Where output goes and how it looks: colour only when stdout is a terminal and
/// `NO_COLOR` is unset or empty; progress only when stderr is a terminal.
public struct Terminal: Sendable {
  public var color: Bool
  public var progress: Bool

  public init(color: Bool, progress: Bool) {
    self.color = color
    self.progress = progress
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
      progress: isatty(STDERR_FILENO) == 1)
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
