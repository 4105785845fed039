import Foundation

/// The learner's progress: the last verdict of each exercise and how many hints were shown.
public struct Progress: Codable, Sendable, Equatable {
  public struct Entry: Codable, Sendable, Equatable {
    public var verdict: Verdict?
    public var hintsShown: Int

    public init(verdict: Verdict? = nil, hintsShown: Int = 0) {
      self.verdict = verdict
      self.hintsShown = hintsShown
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

/// Reads and writes `.workbook/progress.json` (git-ignored). A missing or unreadable file
/// is replaced by a fresh one (an unreadable one with a one-line notice); writes go to a temporary file that
/// is then renamed over the old one, so an interrupted write never leaves half a file.
public struct ProgressStore: Sendable {
  public static let relativePath = ".workbook/progress.json"
  public let url: URL

  public init(root: URL) {
    url = root.appendingPathComponent(Self.relativePath)
  }

  /// The stored progress; `notice` receives one line when the file had to be rebuilt.
  public func load(notice: (String) -> Void = { Output.err($0) }) -> Progress {
    // A first run has no file yet: that is normal and needs no notice.
    guard FileManager.default.fileExists(atPath: url.path) else { return Progress() }
    guard let data = try? Data(contentsOf: url),
      let progress = try? JSONDecoder().decode(Progress.self, from: data)
    else {
      notice("workbook: \(Self.relativePath) was unreadable; starting a new one")
      return Progress()
    }
    return progress
  }

  public func save(_ progress: Progress) throws(WorkbookError) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    let folder = url.deletingLastPathComponent()
    let temporary = folder.appendingPathComponent(
      ".progress-\(getpid())-\(UUID().uuidString).json")
    do {
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      let data = try encoder.encode(progress)
      try data.write(to: temporary)
    } catch {
      try? FileManager.default.removeItem(at: temporary)
      throw .failure("cannot write \(Self.relativePath): \(error.localizedDescription)")
    }
    if rename(temporary.path, url.path) != 0 {
      let reason = String(cString: strerror(errno))
      try? FileManager.default.removeItem(at: temporary)
      throw .failure("cannot write \(Self.relativePath): \(reason)")
    }
  }
}
