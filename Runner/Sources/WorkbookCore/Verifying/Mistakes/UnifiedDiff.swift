import Foundation

/// A strict unified diff (`diff -u`), applied without the `patch` tool: the header lines
/// (`---`, `+++`, `diff …`) are ignored, each hunk's context and removed lines must match
/// the file exactly, and a hunk may be found at an offset from its stated line (the nearest
/// match wins, never before the previous hunk's end).
public struct UnifiedDiff: Sendable, Equatable {
  public struct Hunk: Sendable, Equatable {
    /// The header as written, e.g. `@@ -3,6 +3,7 @@`.
    public var header: String
    /// The stated first line of the old text (1-based; 0 for an empty old side).
    public var oldStart: Int
    /// The lines the hunk expects (context and removed), each with its line ending
    /// (`"\n"`, or none for a last line without one).
    public var old: [String]
    /// The lines the hunk leaves (context and added), the same way.
    public var new: [String]
  }

  public var hunks: [Hunk]

  /// Why a diff could not be read or applied; the message names the patch, the hunk and
  /// the line.
  public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
  }

  /// Reads `text`; `name` (the patch's path) is used in error messages.
  public static func parse(_ text: String, name: String) throws(Failure) -> UnifiedDiff {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let header = #/^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/#
    var hunks: [Hunk] = []
    var index = 0
    while index < lines.count {
      let line = lines[index]
      index += 1
      guard let match = try? header.prefixMatch(in: line) else {
        if !hunks.isEmpty, !line.isEmpty, !isHeaderLine(line) {
          throw Failure(
            message: "\(name): line \(index) is not part of any hunk: \(quoted(line))")
        }
        continue
      }
      let number = hunks.count + 1
      let oldStart = Int(match.output.1) ?? 0
      var oldCount = match.output.2.flatMap { Int($0) } ?? 1
      var newCount = match.output.4.flatMap { Int($0) } ?? 1
      var hunk = Hunk(header: String(match.output.0), oldStart: oldStart, old: [], new: [])
      // Which sides the last line belongs to, for a following "\ No newline at end of file".
      var last: (old: Bool, new: Bool) = (false, false)
      while index < lines.count, oldCount > 0 || newCount > 0 || lines[index].hasPrefix("\\") {
        let body = lines[index]
        index += 1
        if body.hasPrefix("\\") {
          if last.old, let end = hunk.old.indices.last { hunk.old[end].removeLast() }
          if last.new, let end = hunk.new.indices.last { hunk.new[end].removeLast() }
          last = (false, false)
          continue
        }
        // Some tools drop the space of an empty context line.
        let kind = body.first ?? " "
        let content = body.isEmpty ? "" : String(body.dropFirst()) + "\n"
        switch kind {
        case " ":
          hunk.old.append(content)
          hunk.new.append(content)
          oldCount -= 1
          newCount -= 1
          last = (true, true)
        case "-":
          hunk.old.append(content)
          oldCount -= 1
          last = (true, false)
        case "+":
          hunk.new.append(content)
          newCount -= 1
          last = (false, true)
        default:
          throw Failure(
            message:
              "\(name): hunk \(number) (\(hunk.header)) has a line that is neither context, "
              + "removed nor added at line \(index): \(quoted(body))")
        }
        if oldCount < 0 || newCount < 0 {
          throw Failure(
            message: "\(name): hunk \(number) (\(hunk.header)) has more lines than its header says")
        }
      }
      if oldCount > 0 || newCount > 0 {
        throw Failure(
          message:
            "\(name): hunk \(number) (\(hunk.header)) ends before the lines its header counts")
      }
      hunks.append(hunk)
    }
    if hunks.isEmpty { throw Failure(message: "\(name): no hunks (no line starting with @@)") }
    return UnifiedDiff(hunks: hunks)
  }

  static func isHeaderLine(_ line: String) -> Bool {
    ["--- ", "+++ ", "diff ", "index ", "Index: ", "===", "new file", "deleted file", "Only in"]
      .contains { line.hasPrefix($0) }
  }

  /// Applies the hunks to `text`; `name` (the patch's path) is used in error messages.
  public func apply(to text: String, name: String) throws(Failure) -> String {
    var lines = Self.lines(of: text)
    // Lines added minus lines removed so far: where the next hunk is now expected.
    var shift = 0
    var floor = 0
    for (offset, hunk) in hunks.enumerated() {
      let stated = max(0, (hunk.old.isEmpty ? hunk.oldStart : hunk.oldStart - 1) + shift)
      guard let at = position(of: hunk, in: lines, near: stated, from: floor) else {
        throw mismatch(hunk, number: offset + 1, in: lines, at: stated, name: name)
      }
      lines.replaceSubrange(at..<(at + hunk.old.count), with: hunk.new)
      shift += hunk.new.count - hunk.old.count
      floor = at + hunk.new.count
    }
    return lines.joined()
  }

  /// The line (0-based) nearest `stated` where the hunk's old lines are, not before `floor`.
  func position(of hunk: Hunk, in lines: [String], near stated: Int, from floor: Int) -> Int? {
    let last = lines.count - hunk.old.count
    guard last >= floor else { return nil }
    if hunk.old.isEmpty { return min(max(stated, floor), lines.count) }
    func matches(_ at: Int) -> Bool {
      at >= floor && at <= last && Array(lines[at..<(at + hunk.old.count)]) == hunk.old
    }
    let reach = max(stated - floor, last - stated)
    for distance in 0...max(0, reach) {
      if matches(stated - distance) { return stated - distance }
      if distance > 0, matches(stated + distance) { return stated + distance }
    }
    return nil
  }

  /// The error for a hunk found nowhere: the first line that differs at its stated place.
  func mismatch(
    _ hunk: Hunk, number: Int, in lines: [String], at stated: Int, name: String
  ) -> Failure {
    let prefix = "\(name): hunk \(number) (\(hunk.header)) does not apply"
    for (index, expected) in hunk.old.enumerated() {
      let line = stated + index
      guard line < lines.count else {
        return Failure(
          message:
            "\(prefix): line \(line + 1) should be \(Self.quoted(expected)) but the file has "
            + "only \(lines.count) lines")
      }
      if lines[line] != expected {
        return Failure(
          message:
            "\(prefix): line \(line + 1) should be \(Self.quoted(expected)) but is "
            + "\(Self.quoted(lines[line])) (and the hunk matches nowhere else in the file)")
      }
    }
    return Failure(message: "\(prefix): its lines are found nowhere in the file")
  }

  /// The lines of `text`, each with its `"\n"` (the last one without, if the text does not
  /// end with a newline).
  static func lines(of text: String) -> [String] {
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
      String($0) + "\n"
    }
    // "a\nb\n" splits into ["a", "b", ""]: the empty tail is no line. "a\nb" ends in "b".
    if let end = lines.indices.last {
      if lines[end] == "\n" {
        lines.removeLast()
      } else {
        lines[end].removeLast()
      }
    }
    return lines
  }

  static func quoted(_ line: String) -> String {
    let shown = line.hasSuffix("\n") ? String(line.dropLast()) : line + " (no newline at end)"
    return "`\(shown)`"
  }
}
