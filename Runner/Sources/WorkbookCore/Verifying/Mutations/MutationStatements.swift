import Foundation

/// The statements of a file's code scopes that a mutant may delete, each as the range of
/// lines it spans (a call with a trailing closure, an `if` with its block, a chained call
/// over several lines are one statement; the statements inside their blocks are further
/// ones).
///
/// Left out, because deleting them does nothing useful or cannot compile: declaration
/// headers, lines of braces alone, comments, `case` labels and accessors, continuation
/// lines of a longer statement; the last statement of a body that must produce a value or
/// of a `guard`'s `else`; the only statement under a `case`; a `let`, `var` or `guard`
/// whose names are used later in the scope.
enum MutationStatements {
  /// A statement: its first and last line (0-based indexes into the map's lines).
  struct Statement: Equatable {
    var first: Int
    var last: Int
  }

  static func find(in map: MutationSourceMap) -> [Statement] {
    let lines = map.lines
    var candidates: [(statement: Statement, scope: Int)] = []
    var previousCode: String?
    for index in lines.indices {
      let code = lines[index].trimmedCode
      defer { if !code.isEmpty { previousCode = code } }
      guard !code.isEmpty, let scope = lines[index].scope, scope.isBody,
        lines[index].openParensInScope == 0, !startsMidStatement(code),
        !(previousCode.map(endsMidStatement) ?? false), !isLabelOrDeclaration(code),
        let last = end(of: index, in: lines)
      else { continue }
      candidates.append((Statement(first: index, last: last), scope.id))
    }
    // A scope's statements, to tell its last one.
    let lastOfScope = Dictionary(grouping: candidates, by: \.scope).compactMapValues {
      $0.last?.statement
    }
    return candidates.compactMap { candidate in
      let statement = candidate.statement
      if lines[statement.first].scope?.needsLastStatement == true,
        lastOfScope[candidate.scope] == statement
      {
        return nil
      }
      if isOnlyStatementOfCase(statement, in: lines) { return nil }
      if bindsNamesUsedLater(statement, in: lines) { return nil }
      return statement
    }
  }

  /// True when the statement sits alone under a `case` or `default` label, which must have
  /// a statement.
  static func isOnlyStatementOfCase(
    _ statement: Statement, in lines: [MutationSourceMap.Line]
  )
    -> Bool
  {
    let before = lines[..<statement.first].last { !$0.trimmedCode.isEmpty }?.trimmedCode
    let after = lines[(statement.last + 1)...].first { !$0.trimmedCode.isEmpty }?.trimmedCode
    func isLabel(_ code: String?) -> Bool {
      guard let code else { return false }
      return ["case", "default"].contains(firstWord(code) ?? "") || code.hasPrefix("@unknown")
    }
    return isLabel(before) && (isLabel(after) || after?.hasPrefix("}") == true)
  }

  /// The statement's last line: the first line after which the brackets are back to where
  /// they were at its start, the line does not end halfway (`=`, `&&`, `,` …) and the next
  /// line does not continue it (`.map`, `else`, `catch`, a binary operator). `nil` when a
  /// line closes the enclosing scope first (the line is not a whole statement).
  static func end(of first: Int, in lines: [MutationSourceMap.Line]) -> Int? {
    let level = lines[first].nestingAtStart
    var index = first
    while index < lines.count {
      if lines[index].lowestNesting < level { return nil }
      let next = index + 1
      let nextCode = lines[next...].first { !$0.trimmedCode.isEmpty }
      let closed = next >= lines.count || lines[next].nestingAtStart == level
      if closed, !endsMidStatement(lines[index].trimmedCode),
        !(nextCode.map { startsMidStatement($0.trimmedCode) && !$0.trimmedCode.hasPrefix("}") }
          ?? false)
      {
        return index
      }
      index = next
    }
    return nil
  }

  static let operatorCharacters = Set("=-+*/%<>&|^~?!.")

  /// A line that continues the statement above rather than starting one.
  static func startsMidStatement(_ code: String) -> Bool {
    guard let first = code.first else { return false }
    if "})].".contains(first) { return true }
    if firstWord(code).map({ ["else", "catch", "where"].contains($0) }) == true { return true }
    // A binary operator: an operator followed by a space (`-value` is a statement).
    let symbol = code.prefix { operatorCharacters.contains($0) }
    return !symbol.isEmpty && code.dropFirst(symbol.count).first == " "
  }

  /// A line that leaves its statement unfinished.
  static func endsMidStatement(_ code: String) -> Bool {
    guard let last = code.last else { return false }
    if ",([".contains(last) { return true }
    if last == "." { return true }
    // A trailing binary operator (`x =`, `a &&`); a postfix `!` or `?` or a generic's `>`
    // ends a line too, so an operator counts only after a space.
    let symbol = String(code.reversed().prefix { operatorCharacters.contains($0) }.reversed())
    guard !symbol.isEmpty, symbol != "!", symbol != "?", symbol != ">" else { return false }
    return code.dropLast(symbol.count).last == " "
  }

  /// `case` and `default` labels, accessors, declarations, attributes and compiler
  /// directives: lines that are not statements to delete.
  static func isLabelOrDeclaration(_ code: String) -> Bool {
    if code.hasPrefix("@") || code.hasPrefix("#") { return true }
    guard let word = firstWord(code) else { return false }
    return declarationWords.contains(word)
  }

  static let declarationWords = MutationSourceMap.typeKeywords.union([
    "case", "default", "get", "set", "willSet", "didSet", "func", "init", "deinit",
    "subscript", "typealias", "import", "private", "fileprivate", "public", "internal",
    "static", "nonisolated", "mutating",
  ])

  static func firstWord(_ code: String) -> String? {
    let word = code.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
    return word.isEmpty ? nil : String(word)
  }

  /// True for a `let`, `var` or `guard` statement whose bound names appear again before
  /// its scope ends: deleting it could not compile.
  static func bindsNamesUsedLater(
    _ statement: Statement, in lines: [MutationSourceMap.Line]
  ) -> Bool {
    let code = lines[statement.first].trimmedCode
    guard let word = firstWord(code), ["let", "var", "guard"].contains(word) else {
      return false
    }
    let names = boundNames(
      lines[statement.first...statement.last].map(\.code).joined(separator: " "))
    guard !names.isEmpty else { return false }
    let level = lines[statement.first].nestingAtStart
    var index = statement.last + 1
    while index < lines.count, lines[index].nestingAtStart >= level {
      if !names.isDisjoint(with: usedWords(lines[index])) { return true }
      if lines[index].lowestNesting < level { break }
      index += 1
    }
    return false
  }

  /// The words of a line's code and of its string interpolations (`"\\(name)"`), which the
  /// blanked code hides.
  static func usedWords(_ line: MutationSourceMap.Line) -> Set<String> {
    let interpolations = line.text.matches(of: #/\\\(([^)]*)\)/#).map { String($0.output.1) }
    return Set(
      ([line.code] + interpolations).flatMap {
        $0.split { !($0.isLetter || $0.isNumber || $0 == "_") }.map(String.init)
      })
  }

  /// The names a statement binds: after each `let` or `var`, the name or the names of a
  /// tuple pattern (`let (a, b) = …`); `_` binds nothing.
  static func boundNames(_ code: String) -> Set<String> {
    var names: Set<String> = []
    for match in code.matches(of: #/\b(?:let|var)\s+(\(([^)]*)\)|[A-Za-z_][A-Za-z0-9_]*)/#) {
      let pattern = match.output.2 ?? match.output.1
      for name in pattern.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") })
      where name != "_" {
        names.insert(String(name))
      }
    }
    return names
  }
}
