import Foundation

/// Stopping a child together with everything it started.
///
/// Killing a child's process group is not enough: `swift build` starts each compiler job
/// (`swiftc`, `swift-frontend`) in a process group of its own. On Linux the runner reads
/// the process tree from /proc, freezes the whole tree with SIGSTOP (so nothing in it can
/// start more processes or be re-parented away while it is being stopped), then kills
/// every member. Elsewhere it falls back to the child's process group.
public enum ProcessTree {
  /// The processes under `pid` (not `pid` itself), found through their parent ids.
  public static func descendants(of pid: Int32) -> [Int32] {
    #if os(Linux)
    let parents = parentTable()
    var children: [Int32: [Int32]] = [:]
    for (child, parent) in parents { children[parent, default: []].append(child) }
    var found: [Int32] = []
    var queue = children[pid] ?? []
    while let next = queue.popLast() {
      found.append(next)
      queue.append(contentsOf: children[next] ?? [])
    }
    return found
    #else
    return []
    #endif
  }

  /// Kills `pid`, its process group and every process under it.
  public static func stop(_ pid: Int32) {
    killTree(under: pid, including: true)
  }

  /// Kills every process under `pid`, leaving `pid` itself running (used with the
  /// runner's own pid when the learner presses Ctrl-C).
  public static func stopDescendants(of pid: Int32) {
    killTree(under: pid, including: false)
  }

  private static func killTree(under pid: Int32, including: Bool) {
    var frozen: Set<Int32> = including ? [pid] : []
    if including {
      _ = kill(pid, SIGSTOP)
    }
    // Freeze until no new member appears: a stopped process cannot fork.
    for _ in 0..<20 {
      let members = Set(descendants(of: pid)).subtracting(frozen)
      if members.isEmpty { break }
      for member in members { _ = kill(member, SIGSTOP) }
      frozen.formUnion(members)
    }
    for member in frozen { _ = kill(member, SIGKILL) }
    if including {
      // The group, for systems without /proc, and for members that left the tree.
      _ = kill(-pid, SIGKILL)
      _ = kill(pid, SIGKILL)
    }
  }

  /// True when `pid` has ended but nobody has collected its exit status yet.
  public static func hasEnded(_ pid: Int32) -> Bool {
    #if os(Linux)
    return fields(of: pid)?.first == "Z"
    #else
    return false
    #endif
  }

  #if os(Linux)
  /// pid → parent pid for every process in /proc.
  static func parentTable() -> [Int32: Int32] {
    var table: [Int32: Int32] = [:]
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    for name in names {
      guard let pid = Int32(name), let parent = parent(of: pid) else { continue }
      table[pid] = parent
    }
    return table
  }

  /// The parent pid from /proc/PID/stat ("pid (comm) state ppid …"; comm may hold
  /// spaces and parentheses, so the fields are read after the last ')').
  static func parent(of pid: Int32) -> Int32? {
    guard let fields = fields(of: pid), fields.count > 1 else { return nil }
    return Int32(fields[1])
  }

  /// The fields of /proc/PID/stat after the command name: state, ppid, pgrp, …
  static func fields(of pid: Int32) -> [Substring]? {
    guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else {
      return nil
    }
    let text = String(decoding: data, as: UTF8.self)
    guard let close = text.lastIndex(of: ")") else { return nil }
    return text[text.index(after: close)...].split(separator: " ")
  }
  #endif
}
