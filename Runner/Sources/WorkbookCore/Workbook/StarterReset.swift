import Foundation

/// `workbook reset ID`: puts an exercise's file back as shipped. The learner's version is
/// copied to `.workbook/backups/` first, so nothing they wrote is lost.
public enum StarterReset {
  public enum Outcome: Equatable, Sendable {
    /// The file already was the starter as shipped; nothing was written.
    case unchanged(path: String)
    /// The starter was written back; the learner's version is at `backup` (relative to the
    /// root), or `nil` when the file was missing.
    case restored(path: String, backup: String?)
  }

  /// Where the learner's versions are kept, relative to the root.
  public static let backupFolder = ".workbook/backups"

  /// Resets `exercise` of `chapter` in the workbook at `root`; `now` names the backup.
  public static func reset(
    _ exercise: Exercise, in chapter: Chapter, root: URL, now: Date = Date()
  ) throws(WorkbookError) -> Outcome {
    let path = chapter.starterPath(exercise)
    let file = root.appendingPathComponent(path)
    let current = FileManager.default.contents(atPath: file.path)
    if let current, Digest.of(current) == exercise.starterDigest {
      return .unchanged(path: path)
    }
    // The shipped starter is the committed one whose digest workbook.json records.
    let git = GitFiles(root: root)
    guard git.available else {
      throw .failure(
        "workbook reset: cannot read the shipped starter of \(exercise.id) (\(git.why)); "
          + "nothing was changed")
    }
    guard let starter = git.show(path), Digest.of(starter) == exercise.starterDigest else {
      throw .failure(
        "workbook reset: the committed \(path) is not the starter workbook.json records for "
          + "\(exercise.id); nothing was changed")
    }
    var backup: String?
    if let current {
      backup = try keep(
        current, of: exercise, fileName: file.lastPathComponent, root: root, now: now)
    }
    do {
      try FileManager.default.createDirectory(
        at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
      try starter.write(to: file, options: .atomic)
    } catch {
      throw .failure(
        "workbook reset: could not write \(path): \(error.localizedDescription)"
          + (backup.map { "; your version is kept at \($0)" } ?? ""))
    }
    return .restored(path: path, backup: backup)
  }

  /// Copies the learner's `content` to a new file under ``backupFolder``, named for the
  /// exercise and the time (`1.3-20261126-093015-03-OptionalPair.swift`); returns its path.
  static func keep(
    _ content: Data, of exercise: Exercise, fileName: String, root: URL, now: Date
  ) throws(WorkbookError) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.dateFormat = "yyyyMMdd-HHmmss"
    let stamp = formatter.string(from: now)
    let folder = root.appendingPathComponent(backupFolder)
    do {
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      var name = "\(exercise.id)-\(stamp)-\(fileName)"
      var copy = 1
      // Two resets within a second keep both versions.
      while FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path) {
        copy += 1
        name = "\(exercise.id)-\(stamp)-\(copy)-\(fileName)"
      }
      try content.write(to: folder.appendingPathComponent(name), options: .withoutOverwriting)
      return "\(backupFolder)/\(name)"
    } catch {
      throw .failure(
        "workbook reset: could not keep your version under \(backupFolder) "
          + "(\(error.localizedDescription)); nothing was changed")
    }
  }
}
