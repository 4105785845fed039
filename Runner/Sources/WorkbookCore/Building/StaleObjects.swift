import Foundation

/// Makes sure a build compiles every source file whose content changed since the last
/// successful build.
///
/// The Swift driver's incremental build sometimes decides that a changed file is up to date
/// and links the object of an earlier version: seen here when a file goes back to content it
/// had two builds earlier (a learner who undoes an edit, the mistakes checker restoring a
/// solution and applying the next variant). SwiftPM then reports success with the old code,
/// and the grade is of code that is no longer there. So the runner remembers each source's
/// digest at the last successful build and, before the next one, deletes the object file of
/// every source whose content differs: a missing object is always recompiled.
enum StaleObjects {
  /// What the runner knew about a source at the last successful build.
  struct Known: Codable, Equatable {
    var size: Int
    var modified: Double
    var digest: String
  }

  static let recordName = "workbook-sources.json"

  /// The sources the last build compiled and their object files, read from each module's
  /// `output-file-map.json` under `<scratch>/debug`.
  static func objects(scratch: URL) -> [String: String] {
    let debug = scratch.appendingPathComponent("debug")
    let manager = FileManager.default
    guard let modules = try? manager.contentsOfDirectory(atPath: debug.path) else { return [:] }
    var objects: [String: String] = [:]
    for module in modules where module.hasSuffix(".build") {
      let map = debug.appendingPathComponent(module).appendingPathComponent("output-file-map.json")
      guard let data = try? Data(contentsOf: map),
        let entries = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
      else { continue }
      for (source, value) in entries where source.hasSuffix(".swift") {
        if let outputs = value as? [String: Any], let object = outputs["object"] as? String {
          objects[source] = object
        }
      }
    }
    return objects
  }

  /// The size and modification time of `path`, or nil if it cannot be read.
  static func stat(_ path: String) -> (size: Int, modified: Double)? {
    guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
      let size = attributes[.size] as? Int,
      let modified = attributes[.modificationDate] as? Date
    else { return nil }
    return (size, modified.timeIntervalSince1970)
  }

  static func load(scratch: URL) -> [String: Known] {
    guard let data = try? Data(contentsOf: scratch.appendingPathComponent(recordName)) else {
      return [:]
    }
    return (try? JSONDecoder().decode([String: Known].self, from: data)) ?? [:]
  }

  /// The current facts about `source`, reusing `known`'s digest when size and time agree.
  static func current(_ source: String, known: Known?) -> Known? {
    guard let (size, modified) = stat(source) else { return nil }
    if let known, known.size == size, known.modified == modified { return known }
    guard let digest = Digest.ofFile(URL(fileURLWithPath: source)) else { return nil }
    return Known(size: size, modified: modified, digest: digest)
  }

  /// Before a build: deletes the objects of `sources` (absolute paths), so that the build
  /// compiles them again and prints their warnings.
  static func removeObjects(of sources: [String], scratch: URL) {
    guard !sources.isEmpty else { return }
    let objects = objects(scratch: scratch)
    for source in sources {
      if let object = objects[source] { try? FileManager.default.removeItem(atPath: object) }
    }
  }

  /// Before a build: deletes the object of every source whose content changed since the
  /// last successful build. Returns the sources concerned.
  @discardableResult
  static func removeObjectsOfChangedSources(scratch: URL) -> [String] {
    let record = load(scratch: scratch)
    guard !record.isEmpty else { return [] }
    var changed: [String] = []
    for (source, object) in objects(scratch: scratch) {
      guard let known = record[source], let now = current(source, known: known),
        now.digest != known.digest
      else { continue }
      try? FileManager.default.removeItem(atPath: object)
      changed.append(source)
    }
    return changed.sorted()
  }

  /// After a successful build: remembers every compiled source's content.
  static func record(scratch: URL) {
    let record = load(scratch: scratch)
    var next: [String: Known] = [:]
    for source in objects(scratch: scratch).keys {
      if let now = current(source, known: record[source]) { next[source] = now }
    }
    guard let data = try? JSONEncoder().encode(next) else { return }
    try? data.write(to: scratch.appendingPathComponent(recordName), options: .atomic)
  }
}
