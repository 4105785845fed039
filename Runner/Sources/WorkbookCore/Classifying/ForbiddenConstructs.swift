import Foundation

/// A construct a chapter does not allow in learner files, e.g. `@unchecked Sendable`, which
/// would silence the compiler's data-race checks instead of answering them.
public struct ForbiddenConstruct: Codable, Sendable, Equatable {
  /// The construct as written in Swift; spaces in it match any run of whitespace.
  public var construct: String
  /// Why the chapter forbids it, in a learner's words; printed under the verdict.
  public var why: String

  public init(construct: String, why: String) {
    self.construct = construct
    self.why = why
  }
}

/// Finds forbidden constructs in Swift source, ignoring comments and string literals (a
/// comment that explains why the answer needs no `@unchecked Sendable` is fine).
public enum ForbiddenConstructScanner {
  /// One use of a construct: the construct and its 1-based line.
  public struct Use: Sendable, Equatable {
    public var construct: ForbiddenConstruct
    public var line: Int
  }

  /// Every use of `constructs` in `source`, in order of line, except those inside a use of
  /// one of `allowed` (an exercise that allows `@preconcurrency import` where its chapter
  /// forbids `@preconcurrency`).
  public static func uses(
    of constructs: [ForbiddenConstruct], in source: String, allowing allowed: [String] = []
  ) -> [Use] {
    let code = SwiftSource.codeOnly(source)
    let range = NSRange(code.startIndex..., in: code)
    let allowedRanges = allowed.flatMap { construct -> [NSRange] in
      guard let pattern = try? NSRegularExpression(pattern: SwiftSource.pattern(for: construct))
      else {
        return []
      }
      return pattern.matches(in: code, range: range).map(\.range)
    }
    var uses: [Use] = []
    for construct in constructs {
      guard
        let pattern = try? NSRegularExpression(
          pattern: SwiftSource.pattern(for: construct.construct))
      else { continue }
      for match in pattern.matches(in: code, range: range) {
        if allowedRanges.contains(where: { NSIntersectionRange($0, match.range) == match.range }) {
          continue
        }
        let line = SwiftSource.position(ofUTF16: match.range.location, in: code).line
        uses.append(Use(construct: construct, line: line))
      }
    }
    return uses.sorted { $0.line < $1.line }
  }

  /// The verdict lines for `uses` in `file`: one per construct, with its lines and the why.
  public static func details(_ uses: [Use], file: String) -> [String] {
    var seen: [String] = []
    var lines: [String] = []
    for use in uses where !seen.contains(use.construct.construct) {
      seen.append(use.construct.construct)
      let at = uses.filter { $0.construct == use.construct }.map { String($0.line) }
      let where_ = at.count == 1 ? "line \(at[0])" : "lines \(at.joined(separator: ", "))"
      lines.append(
        "\(file) uses `\(use.construct.construct)` (\(where_)), which this chapter does not "
          + "allow: \(use.construct.why)")
    }
    return lines
  }
}
