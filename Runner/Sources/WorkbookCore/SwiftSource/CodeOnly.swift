import Foundation

/// Reading Swift source as code: comments and string literals blanked out, constructs found
/// as words, positions as the compiler gives them. The forbidden constructs, the notes and
/// the mutation tool read learner and solution files through it.
public enum SwiftSource {
  /// A regular expression for `construct`: its words in order, any whitespace between
  /// words and around punctuation, and a word boundary where it ends in a word.
  public static func pattern(for construct: String) -> String {
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
  public static func codeOnly(_ source: String) -> String {
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

  /// The 1-based line, and column in UTF-8 bytes as the compiler counts it, of the UTF-16
  /// `offset` in `text` (where `NSRegularExpression` puts a match).
  public static func position(ofUTF16 offset: Int, in text: String) -> (line: Int, column: Int) {
    let before = (text as NSString).substring(to: offset)
    let line = before.reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
    let lineStart = before.lastIndex(of: "\n").map { before.index(after: $0) } ?? before.startIndex
    return (line, before[lineStart...].utf8.count + 1)
  }
}
