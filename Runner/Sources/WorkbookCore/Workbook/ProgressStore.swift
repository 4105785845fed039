import Foundation
import Synchronization

/// The learner's progress: the last verdict of each exercise and how many hints were shown.
public struct Progress: Codable, Sendable, Equatable {
  public struct Entry: Codable, Sendable, Equatable {
    public var verdict: Verdict?
    public var hintsShown: Int
    /// The digest of the file that got `verdict` (absent in files written before it was
    /// kept).
    public var digest: String?

    public init(verdict: Verdict? = nil, hintsShown: Int = 0, digest: String? = nil) {
      self.verdict = verdict
      self.hintsShown = hintsShown
      self.digest = digest
    }
  }

  public var format = 1
  public var exercises: [String: Entry] = [:]

  public init() {}

  public subscript(id: String) -> Entry {
    get { exercises[id] ?? Entry() }
    set { exercises[id] = newValue }
  }
}

/// Reads and writes `.workbook/progress.json` (git-ignored). A missing file starts
/// afresh silently; an unreadable or corrupt one starts afresh with a one-line notice and
/// is replaced by the next save. Writes go to a temporary file that is then renamed over
/// the old one, so an interrupted write never leaves half a file, and Ctrl-C waits for a
/// save in progress (see ``whileNotSaving(_:)``).
public struct ProgressStore: Sendable {
  public static let relativePath = ".workbook/progress.json"
  public let url: URL

  /// Held while a save is in progress.
  private static let saving = Mutex(())

  public init(root: URL) {
    url = root.appendingPathComponent(Self.relativePath)
  }

  /// Runs `body` when no save is in progress (the interrupt handler exits inside it).
  public static func whileNotSaving(_ body: () -> Void) {
    saving.withLock { _ in body() }
  }

  /// The stored progress; `notice` receives one line when the file had to be rebuilt.
  public func load(notice: (String) -> Void = { Output.err($0) }) -> Progress {
    let (progress, problem) = read()
    if let problem { notice(problem) }
    return progress
  }

  /// The stored progress and, when the file exists but cannot be used, a line saying so.
  public func read() -> (Progress, problem: String?) {
    var isFolder: ObjCBool = false
    // A first run has no file yet: that is normal and needs no notice.
    guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) else {
      return (Progress(), nil)
    }
    if isFolder.boolValue {
      return (
        Progress(),
        "workbook: \(Self.relativePath) is a folder, not a file; starting from empty progress"
      )
    }
    guard let data = try? Data(contentsOf: url) else {
      return (
        Progress(),
        "workbook: cannot read \(Self.relativePath) (\(String(cString: strerror(errno)))); "
          + "starting from empty progress"
      )
    }
    do {
      return (try JSONDecoder().decode(Progress.self, from: data), nil)
    } catch {
      return (
        Progress(),
        "workbook: \(Self.relativePath) was unreadable (not valid progress data); "
          + "starting a new one (earlier verdicts and hint counts are forgotten)"
      )
    }
  }

  public func save(_ progress: Progress) throws(WorkbookError) {
    try Self.saving.withLock { _ throws(WorkbookError) in try write(progress) }
  }

  private func write(_ progress: Progress) throws(WorkbookError) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    let folder = url.deletingLastPathComponent()
    if let reason = obstacle() { throw .failure("cannot write \(Self.relativePath): \(reason)") }
    let temporary = folder.appendingPathComponent(
      ".progress-\(getpid())-\(UUID().uuidString).json")
    do {
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      let data = try encoder.encode(progress)
      try data.write(to: temporary)
    } catch {
      try? FileManager.default.removeItem(at: temporary)
      throw .failure(
        "cannot write \(Self.relativePath): \(error.localizedDescription); "
          + "check that you can write to the .workbook folder")
    }
    if rename(temporary.path, url.path) != 0 {
      let reason = String(cString: strerror(errno))
      try? FileManager.default.removeItem(at: temporary)
      throw .failure(
        "cannot write \(Self.relativePath): \(reason); "
          + "check that you can write to the .workbook folder")
    }
  }

  /// Something in the way that no retry fixes, and what to do about it.
  private func obstacle() -> String? {
    var isFolder: ObjCBool = false
    let folder = url.deletingLastPathComponent()
    if FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder),
      !isFolder.boolValue
    {
      return ".workbook is a file, not a folder; remove or rename it (rm .workbook)"
    }
    if FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder),
      isFolder.boolValue
    {
      return "it is a folder, not a file; remove it (rm -r \(Self.relativePath))"
    }
    return nil
  }
}
