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
    let code = codeOnly(source)
    let range = NSRange(code.startIndex..., in: code)
    let allowedRanges = allowed.flatMap { construct -> [NSRange] in
      guard let pattern = try? NSRegularExpression(pattern: pattern(for: construct)) else {
        return []
      }
      return pattern.matches(in: code, range: range).map(\.range)
    }
    var uses: [Use] = []
    for construct in constructs {
      guard let pattern = try? NSRegularExpression(pattern: pattern(for: construct.construct))
      else { continue }
      for match in pattern.matches(in: code, range: range) {
        if allowedRanges.contains(where: { NSIntersectionRange($0, match.range) == match.range }) {
          continue
        }
        guard let found = Range(match.range, in: code) else { continue }
        let line = code[..<found.lowerBound].reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
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

  /// A regular expression for `construct`: its words in order, any whitespace between
  /// words and around punctuation, and a word boundary where it ends in a word.
  static func pattern(for construct: String) -> String {
    var pattern = ""
    var previousIsWord = false
    for character in construct {
      if character.isWhitespace {
        if !pattern.hasSuffix("\\s*") && !pattern.hasSuffix("\\s+") { pattern += "\\s+" }
        previousIsWord = false
        continue
      }
      let isWord = character.isLetter || character.isNumber || character == "_"
      if !isWord || !previousIsWord, !pattern.isEmpty, !pattern.hasSuffix("\\s+") {
        pattern += "\\s*"
      }
      pattern += NSRegularExpression.escapedPattern(for: String(character))
      previousIsWord = isWord
    }
    if previousIsWord { pattern += "\\b" }
    if construct.first.map({ $0.isLetter || $0 == "_" }) == true { pattern = "\\b" + pattern }
    return pattern
  }

  /// `source` with comments and string literals blanked out (newlines kept, so line numbers
  /// still match).
  static func codeOnly(_ source: String) -> String {
    let characters = Array(source)
    var output: [Character] = []
    output.reserveCapacity(characters.count)
    var index = 0
    func blank(_ character: Character) -> Character { character == "\n" ? "\n" : " " }
    func at(_ text: String, _ position: Int) -> Bool {
      let probe = Array(text)
      guard position + probe.count <= characters.count else { return false }
      return Array(characters[position..<position + probe.count]) == probe
    }
    while index < characters.count {
      if at("//", index) {
        while index < characters.count, characters[index] != "\n" {
          output.append(" ")
          index += 1
        }
      } else if at("/*", index) {
        var depth = 0
        repeat {
          if at("/*", index) {
            depth += 1
            output += [" ", " "]
            index += 2
          } else if at("*/", index) {
            depth -= 1
            output += [" ", " "]
            index += 2
          } else {
            output.append(blank(characters[index]))
            index += 1
          }
        } while depth > 0 && index < characters.count
      } else if characters[index] == "#" || characters[index] == "\"" {
        // A string literal, raw (`#"…"#`) or not, single- or multi-line.
        var hashes = 0
        while index + hashes < characters.count, characters[index + hashes] == "#" { hashes += 1 }
        guard index + hashes < characters.count, characters[index + hashes] == "\"" else {
          output.append(characters[index])
          index += 1
          continue
        }
        let delimiter = at("\"\"\"", index + hashes) ? "\"\"\"" : "\""
        let closing = delimiter + String(repeating: "#", count: hashes)
        let openLength = hashes + delimiter.count
        output += Array(repeating: " ", count: openLength)
        index += openLength
        while index < characters.count, !at(closing, index) {
          if hashes == 0, characters[index] == "\\", index + 1 < characters.count {
            output.append(blank(characters[index]))
            output.append(blank(characters[index + 1]))
            index += 2
            continue
          }
          if delimiter == "\"", characters[index] == "\n" { break }  // unterminated
          output.append(blank(characters[index]))
          index += 1
        }
        if at(closing, index) {
          output += Array(repeating: " ", count: closing.count)
          index += closing.count
        }
      } else {
        output.append(characters[index])
        index += 1
      }
    }
    return String(output)
  }
}
