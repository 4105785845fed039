import Foundation

/// How many threads of this process are named `name` now (Linux, whose thread names are
/// cut to 15 bytes: compare at most that much); 0 elsewhere. The legacy kits name their
/// threads, so a test can see how many of them an answer keeps alive.
public func threadsNamed(_ name: String) -> Int {
  #if os(Linux)
  let wanted = String(decoding: name.utf8.prefix(15), as: UTF8.self)
  let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
  return tasks.filter { id in
    let comm = try? String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8)
    return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == wanted
  }.count
  #else
  return 0
  #endif
}
