import Foundation

/// A Swift file read line by line, with just enough structure for mutation: which brace
/// scope each line starts in, whether that scope is code (a function, closure, accessor or
/// initializer body) or a list of declarations (a type, an extension, the file itself),
/// and how deeply brackets are nested.
///
/// It is a line-based reading, not a parser: it relies on the code being formatted by
/// `swift format` (one statement per line, an opening brace at the end of its header), which
/// the workbook's lint guarantees for the solutions. Comments and string literals are
/// blanked first (``SwiftSource/codeOnly(_:)``), so a brace or an operator in
/// them is never taken for code.
struct MutationSourceMap {
  /// A `{ … }` scope.
  struct Scope: Equatable {
    /// Unique within the file, in order of opening.
    var id: Int
    /// True for code (statements); false for declarations (a type's members).
    var isBody: Bool
    /// True when the scope's last statement cannot go: a body that must produce a value (a
    /// function or subscript with a return type other than `Void`, a computed property, a
    /// getter) or a `guard`'s `else` block, which must leave the scope.
    var needsLastStatement: Bool
  }

  struct Line {
    /// The line as written (without its newline).
    var text: String
    /// The same characters with comments and string literals blanked.
    var code: String
    /// Open `(`, `[` and `{` before the line.
    var nestingAtStart: Int
    /// The fewest open brackets at any point of the line (a line that closes a scope goes
    /// below its start).
    var lowestNesting: Int
    /// The innermost brace scope the line starts in (`nil`: the file's top level).
    var scope: Scope?
    /// Open `(` and `[` since that scope's `{`: a line inside an argument list is not a
    /// statement of the scope.
    var openParensInScope: Int

    var trimmedCode: String { code.trimmingCharacters(in: .whitespaces) }
  }

  let lines: [Line]

  /// Source as mutation reads and writes it: CRLF as LF, so that a character of the source
  /// is a character of its blanked copy (`\r\n` is one `Character` in Swift).
  static func normalized(_ source: String) -> String {
    source.replacingOccurrences(of: "\r\n", with: "\n")
  }

  init(_ source: String) {
    let text = Self.normalized(source)
    let code = SwiftSource.codeOnly(text)
    let textLines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let codeLines = code.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)

    enum Frame {
      /// A `{` and the header before it, to resume a header that a closure argument
      /// interrupts (`guard let x = f({ … }) else {`).
      case brace(Scope, header: String)
      case bracket
    }
    var stack: [Frame] = []
    var nextID = 0
    // What was written since the last statement boundary: the header a `{` belongs to.
    var header = ""
    var result: [Line] = []
    for (index, codeLine) in codeLines.enumerated() {
      let lastBrace = stack.lastIndex { if case .brace = $0 { true } else { false } }
      var scope: Scope?
      if let lastBrace, case .brace(let found, _) = stack[lastBrace] { scope = found }
      let openParens = stack.count - (lastBrace.map { $0 + 1 } ?? 0)
      var line = Line(
        text: index < textLines.count ? textLines[index] : codeLine, code: codeLine,
        nestingAtStart: stack.count, lowestNesting: stack.count, scope: scope,
        openParensInScope: openParens)
      for character in codeLine {
        switch character {
        case "{":
          let kind = Self.classify(header)
          stack.append(
            .brace(
              Scope(id: nextID, isBody: kind.isBody, needsLastStatement: kind.needsLast),
              header: header))
          nextID += 1
          header = ""
        case "}":
          let closed = stack.popLast()
          if case .bracket = stack.last, case .brace(_, let outer) = closed {
            header = outer + "{}"
          } else {
            header = ""
          }
        case "(", "[":
          stack.append(.bracket)
          header.append(character)
        case ")", "]":
          if !stack.isEmpty { stack.removeLast() }
          header.append(character)
        case ";":
          header = ""
        default:
          header.append(character)
        }
        line.lowestNesting = min(line.lowestNesting, stack.count)
      }
      // A header goes on over the next line inside brackets (parameters), after a line that
      // ends halfway (a trailing comma of a `guard` list) or before a line that continues
      // it (`else {`); any other line end ends the statement and its header.
      let next = codeLines[(index + 1)...].first {
        !$0.trimmingCharacters(in: .whitespaces).isEmpty
      }
      let nextContinues = next.map {
        let trimmed = $0.trimmingCharacters(in: .whitespaces)
        return MutationStatements.startsMidStatement(trimmed) && !trimmed.hasPrefix("}")
      }
      if case .bracket = stack.last {
        header.append(" ")
      } else if MutationStatements.endsMidStatement(codeLine.trimmingCharacters(in: .whitespaces))
        || nextContinues == true
      {
        header.append(" ")
      } else {
        header = ""
      }
      result.append(line)
    }
    lines = result
  }

  /// Words that open a scope of declarations rather than code.
  static let typeKeywords: Set<String> = [
    "class", "struct", "enum", "extension", "protocol", "actor",
  ]
  /// Declarations whose braces hold code.
  static let codeKeywords: Set<String> = [
    "func", "init", "deinit", "subscript", "var", "let", "get", "set", "willSet", "didSet",
  ]

  /// What a `{` after `header` opens. Inside code, a brace opens code (a closure, a
  /// control-flow block, a nested function) unless it declares a local type.
  static func classify(_ header: String) -> (isBody: Bool, needsLast: Bool) {
    let words = header.split { !($0.isLetter || $0.isNumber || $0 == "_") }.map(String.init)
    if words.first == "guard", words.last == "else" { return (true, true) }
    switch declarationKeyword(words) {
    case let keyword? where typeKeywords.contains(keyword):
      return (false, false)
    case "func", "subscript":
      guard let returnType = returnType(header) else { return (true, false) }
      return (true, !["Void", "()", "Swift.Void"].contains(returnType))
    case "var", "get":
      // A computed property or its getter (a closure assigned with `=` returns nothing
      // this reading can tell).
      return (true, !header.contains("="))
    default:
      return (true, false)
    }
  }

  /// The return type after the `->` that follows the parameter list (not one inside a
  /// parameter's closure type), up to a `where` clause; `nil` when there is none.
  static func returnType(_ header: String) -> String? {
    let characters = Array(header)
    var depth = 0
    var arrow: Int?
    for index in characters.indices {
      switch characters[index] {
      case "(", "[": depth += 1
      case ")", "]": depth -= 1
      case "-" where depth == 0 && index + 1 < characters.count && characters[index + 1] == ">":
        arrow = index + 2
      default: break
      }
    }
    guard let arrow else { return nil }
    let rest = String(characters[arrow...])
    let type = rest.components(separatedBy: " where ")[0]
    return type.trimmingCharacters(in: .whitespaces)
  }

  /// The first declaration keyword of a header (`class` as in `class func` is a modifier).
  static func declarationKeyword(_ words: [String]) -> String? {
    for (index, word) in words.enumerated() {
      if word == "class", index + 1 < words.count,
        codeKeywords.contains(words[index + 1]) || ["final", "override"].contains(words[index + 1])
      {
        continue
      }
      if typeKeywords.contains(word) || codeKeywords.contains(word) { return word }
    }
    return nil
  }
}
