import Foundation

/// One small change to a solution file: a statement deleted, or a comparison or boolean
/// flipped. The tests should notice it; a mutant they let pass shows something they do not
/// check.
public struct Mutant: Sendable, Equatable {
  public enum Change: Sendable, Equatable {
    /// The statement on `lineCount` lines from ``Mutant/line`` is removed.
    case delete(lineCount: Int)
    /// `from` at character offset `column` of the line becomes `to`.
    case flip(from: String, to: String, column: Int)
  }

  /// Stable across edits elsewhere in the file (see ``MutationIdentity``), e.g.
  /// `3f2a91c0:delete` or `3f2a91c0:flip:==`.
  public var id: String
  /// 1-based line of the change (the statement's first line).
  public var line: Int
  public var change: Change
  /// The original line, trimmed (the first line of a statement over several).
  public var original: String

  public init(id: String, line: Int, change: Change, original: String) {
    self.id = id
    self.line = line
    self.change = change
    self.original = original
  }

  /// "delete" or "delete lines 14-16", "`==` → `!=`".
  public var summary: String {
    switch change {
    case .delete(let count):
      count == 1 ? "delete" : "delete lines \(line)-\(line + count - 1)"
    case .flip(let from, let to, _):
      "`\(from)` → `\(to)`"
    }
  }

  /// The file with this mutant applied.
  public func apply(to source: String) -> String {
    var lines = MutationSourceMap.normalized(source).split(
      separator: "\n", omittingEmptySubsequences: false
    ).map(String.init)
    let index = line - 1
    guard lines.indices.contains(index) else { return source }
    switch change {
    case .delete(let count):
      lines.removeSubrange(index..<min(lines.count, index + count))
    case .flip(let from, let to, let column):
      var characters = Array(lines[index])
      guard column + from.count <= characters.count,
        String(characters[column..<column + from.count]) == from
      else { return source }
      characters.replaceSubrange(column..<column + from.count, with: Array(to))
      lines[index] = String(characters)
    }
    return lines.joined(separator: "\n")
  }
}
