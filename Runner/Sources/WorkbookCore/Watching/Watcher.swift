import Foundation

/// Notices edits under a folder by polling modification times and sizes (no file-system
/// event APIs, so it works the same on Linux and macOS without dependencies).
public struct Watcher: Sendable {
  public struct Stamp: Sendable, Equatable {
    public var modified: Date
    public var size: Int
  }

  public let folder: URL

  public init(folder: URL) { self.folder = folder }

  /// Every regular file under the folder (hidden files and folders skipped), by path
  /// relative to the folder.
  public func snapshot() -> [String: Stamp] {
    var stamps: [String: Stamp] = [:]
    let keys: [URLResourceKey] = [.contentModificationDateKey, .fileSizeKey, .isRegularFileKey]
    guard
      let enumerator = FileManager.default.enumerator(
        at: folder, includingPropertiesForKeys: keys, options: [.skipsHiddenFiles])
    else { return stamps }
    let base = folder.standardizedFileURL.path
    for case let url as URL in enumerator {
      guard let values = try? url.resourceValues(forKeys: Set(keys)),
        values.isRegularFile == true
      else { continue }
      var path = url.standardizedFileURL.path
      if path.hasPrefix(base + "/") { path = String(path.dropFirst(base.count + 1)) }
      stamps[path] = Stamp(
        modified: values.contentModificationDate ?? .distantPast, size: values.fileSize ?? 0)
    }
    return stamps
  }

  /// Paths added, removed or changed between two snapshots, sorted.
  public static func changes(from old: [String: Stamp], to new: [String: Stamp]) -> [String] {
    let paths = Set(old.keys).union(new.keys)
    return paths.filter { old[$0] != new[$0] }.sorted()
  }

  /// The chapter a changed path (relative to Chapters/) belongs to, e.g. `01-Callbacks/…`.
  public static func chapter(of path: String, in workbook: Workbook) -> Chapter? {
    guard let folder = path.split(separator: "/").first else { return nil }
    return workbook.chapters.first { $0.folder == folder }
  }

  /// The exercises of `chapter` to re-grade after `paths` (relative to Chapters/) changed:
  /// those whose files changed, or every exercise when another file of the chapter changed
  /// (a helper any of them may use) or nothing of it did.
  public static func exercises(affectedBy paths: [String], in chapter: Chapter) -> [Exercise] {
    let byPath = Dictionary(
      chapter.exercises.map { ("\(chapter.folder)/\($0.file)", $0) },
      uniquingKeysWith: { a, _ in a })
    let hit = paths.compactMap { byPath[$0] }
    guard !hit.isEmpty, hit.count == paths.count else { return chapter.exercises }
    return chapter.exercises.filter { exercise in hit.contains { $0.id == exercise.id } }
  }
}
