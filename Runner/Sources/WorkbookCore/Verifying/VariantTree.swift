import Foundation
import Synchronization

/// A scratch copy of the package that the runner builds instead of the root.
///
/// `workbook mistakes` uses `.build-variants/tree/`, a copy of `Package.swift`, `Support/`,
/// `Tests/` and `Solutions/` in which one solution file per exercise at a time is replaced
/// by a mistake or an alternative. `workbook verify` uses `.build-starters/tree/`, whose
/// `Chapters/` holds the starters as committed rather than the learner's edits.
///
/// Syncing copies a file only when its bytes differ (so unchanged files keep their
/// modification times and builds stay incremental) and removes files that vanished from
/// the root. Every replaced file's original is remembered and written back by
/// ``restore()``: after each round, at the end, and on Ctrl-C. After a restore on
/// interrupt the tree is closed and refuses further writes. A run killed outright leaves a
/// variant in the tree; the next sync puts the solution back.
public final class VariantTree: Sendable {
  /// The folder under the root that holds the mistakes' tree and its build.
  public static let folder = ".build-variants"
  /// The second tree of `workbook mistakes`, which builds the next round while the first
  /// one's suites run (see ``MistakeChecker``).
  public static let secondFolder = folder + "/second"
  /// What the mistakes' tree copies from the root.
  public static let copied = ["Package.swift", "Support", "Tests", "Solutions"]

  public let root: URL
  public let tree: URL
  /// The scratch path the tree is built with (absolute).
  public let scratchPath: String
  /// The folder under the root that holds the tree and its build, and what is copied.
  public let folder: String
  public let copied: [String]

  private struct State {
    var originals: [String: Data] = [:]
    var closed = false
    /// The open lock file while this process holds the tree (closed at exit).
    var lock: Int32?
  }
  private let state = Mutex(State())

  public init(root: URL, folder: String = VariantTree.folder, copied: [String] = VariantTree.copied)
  {
    self.root = root
    self.folder = folder
    self.copied = copied
    let base = root.appendingPathComponent(folder)
    tree = base.appendingPathComponent("tree")
    scratchPath = base.appendingPathComponent("build").path
  }

  /// Makes the tree match the root's copied files.
  public func sync() throws(WorkbookError) {
    try claim()
    let manager = FileManager.default
    var wanted: Set<String> = []
    for entry in copied {
      let source = root.appendingPathComponent(entry)
      var isFolder: ObjCBool = false
      guard manager.fileExists(atPath: source.path, isDirectory: &isFolder) else { continue }
      if isFolder.boolValue {
        wanted.formUnion(Watcher(folder: source).snapshot().keys.map { "\(entry)/\($0)" })
      } else {
        wanted.insert(entry)
      }
    }
    do {
      try manager.createDirectory(at: tree, withIntermediateDirectories: true)
      for path in wanted.sorted() {
        let source = root.appendingPathComponent(path)
        let target = tree.appendingPathComponent(path)
        if manager.contentsEqual(atPath: source.path, andPath: target.path) { continue }
        try manager.createDirectory(
          at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contentsOf: source).write(to: target)
      }
      for entry in copied {
        let copiedFolder = tree.appendingPathComponent(entry)
        for path in Watcher(folder: copiedFolder).snapshot().keys
        where !wanted.contains("\(entry)/\(path)") {
          try manager.removeItem(at: copiedFolder.appendingPathComponent(path))
        }
      }
    } catch {
      throw .failure(
        "cannot copy the workbook into \(tree.path): \(error.localizedDescription) "
          + "(remove \(folder) and try again)")
    }
  }

  /// Takes `<folder>/lock` for the rest of this process, waiting while another run holds
  /// it: two runs writing variants into one tree would grade each other's files.
  private func claim() throws(WorkbookError) {
    if state.withLock({ $0.lock != nil }) { return }
    let base = root.appendingPathComponent(folder)
    try? FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
    let path = base.appendingPathComponent("lock").path
    let descriptor = open(path, O_CREAT | O_RDWR, 0o644)
    guard descriptor >= 0 else { throw .failure("cannot open \(path) to lock \(folder)") }
    if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
      let holder = (try? String(contentsOfFile: path, encoding: .utf8))?
        .trimmingCharacters(in: .whitespacesAndNewlines)
      let who = holder.map { $0.isEmpty ? "" : " (process \($0))" } ?? ""
      FileHandle.standardError.write(
        Data(
          ("another workbook run\(who) is using \(folder); waiting for it to finish, "
            + "as two runs in one tree would grade each other's files…\n").utf8))
      guard flock(descriptor, LOCK_EX) == 0 else {
        close(descriptor)
        throw .failure("cannot lock \(path)")
      }
    }
    _ = ftruncate(descriptor, 0)
    let pid = Data("\(getpid())\n".utf8)
    _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    state.withLock { $0.lock = descriptor }
  }

  /// Replaces the tree's file at `path` (relative to the root) with `data`, remembering
  /// the original the first time.
  public func write(_ path: String, _ data: Data) throws(WorkbookError) {
    let url = tree.appendingPathComponent(path)
    let result: Result<Void, WorkbookError> = state.withLock { state in
      if state.closed { return .failure(.interrupted) }
      if state.originals[path] == nil {
        guard let original = try? Data(contentsOf: url) else {
          return .failure(.failure("cannot read \(url.path)"))
        }
        state.originals[path] = original
      }
      do {
        try data.write(to: url, options: .atomic)
      } catch {
        return .failure(.failure("cannot write \(url.path): \(error.localizedDescription)"))
      }
      return .success(())
    }
    try result.get()
  }

  /// Writes every replaced file's original back. With `closing`, later writes are refused
  /// (for Ctrl-C, while another thread may still be setting up a round).
  public func restore(closing: Bool = false) {
    state.withLock { state in
      for (path, data) in state.originals {
        try? data.write(to: tree.appendingPathComponent(path), options: .atomic)
      }
      state.originals = [:]
      if closing { state.closed = true }
    }
  }
}
