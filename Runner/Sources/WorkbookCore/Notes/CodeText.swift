import Foundation

/// Code-only Swift text, with the brace and region helpers the detectors share. Offsets are
/// UTF-16, as `NSRegularExpression` gives them.
struct CodeText {
  let code: String
  let units: NSString

  init(_ code: String) {
    self.code = code
    self.units = code as NSString
  }

  var length: Int { units.length }

  func character(at offset: Int) -> Character {
    Character(UnicodeScalar(units.character(at: offset)) ?? " ")
  }

  /// The start offsets of `pattern`'s matches in `range` (the whole text by default).
  func find(_ pattern: String, in range: Range<Int>? = nil) -> [Int] {
    ranges(pattern, in: range).map(\.lowerBound)
  }

  func ranges(_ pattern: String, in range: Range<Int>? = nil) -> [Range<Int>] {
    guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
    let within = range ?? 0..<length
    return regex.matches(
      in: code, range: NSRange(location: within.lowerBound, length: within.count)
    ).map { $0.range.location..<($0.range.location + $0.range.length) }
  }

  func contains(_ pattern: String, in range: Range<Int>) -> Bool {
    !ranges(pattern, in: range).isEmpty
  }

  /// The offset just past the bracket that closes the one at `open` (`{`, `(` or `[`), or
  /// the end of the text.
  func close(of open: Int) -> Int {
    let opening = character(at: open)
    let closing: Character = opening == "{" ? "}" : opening == "(" ? ")" : "]"
    var depth = 0
    var index = open
    while index < length {
      let here = character(at: index)
      if here == opening {
        depth += 1
      } else if here == closing {
        depth -= 1
        if depth == 0 { return index + 1 }
      }
      index += 1
    }
    return length
  }

  /// The first `{` at or after `start` outside parentheses and brackets, unless a `}` or a
  /// `;` comes first.
  func nextBrace(after start: Int) -> Int? {
    var depth = 0
    var index = start
    while index < length {
      switch character(at: index) {
      case "(", "[": depth += 1
      case ")", "]": depth -= 1
      case "{" where depth <= 0: return index
      case "}", ";": if depth <= 0 { return nil }
      default: break
      }
      index += 1
    }
    return nil
  }

  /// The body (from its `{` to just past its `}`) of the block that opens at the first
  /// brace after `start`.
  func block(after start: Int) -> Range<Int>? {
    nextBrace(after: start).map { $0..<close(of: $0) }
  }

  /// The words before the `{` at `open`, back to the previous `{`, `}` or `;`: what
  /// opens the block (`Task.detached`, `func load() async throws`, `for x in xs`).
  func header(of open: Int) -> String {
    var index = open - 1
    var depth = 0
    while index >= 0 {
      let here = character(at: index)
      if here == ")" || here == "]" {
        depth += 1
      } else if here == "(" || here == "[" {
        depth -= 1
      } else if depth <= 0, here == "{" || here == "}" || here == ";" {
        break
      }
      index -= 1
    }
    return units.substring(with: NSRange(location: index + 1, length: open - index - 1))
  }

  /// The blocks that contain `offset`, innermost first.
  func enclosingBlocks(of offset: Int) -> [Range<Int>] {
    var blocks: [Range<Int>] = []
    var depth = 0
    var index = offset - 1
    while index >= 0 {
      let here = character(at: index)
      if here == "}" {
        depth += 1
      } else if here == "{" {
        if depth == 0 {
          blocks.append(index..<close(of: index))
        } else {
          depth -= 1
        }
      }
      index -= 1
    }
    return blocks
  }

  // MARK: Regions

  /// Bodies of functions and initializers declared `async`, and of the closures that tasks
  /// run (`Task {}`, `Task.detached {}`, `addTask {}`).
  func asyncRegions() -> [Range<Int>] {
    var regions: [Range<Int>] = []
    for start in find(#"\b(func\s+[^\s(<]+|init[?!]?)\s*(<[^{(]*>)?\s*\("#) {
      guard let paren = find(#"\("#, in: start..<length).first else { continue }
      let afterParameters = close(of: paren)
      guard let open = nextBrace(after: afterParameters) else { continue }
      let effects = units.substring(
        with: NSRange(location: afterParameters, length: open - afterParameters))
      // A protocol's requirement has no body: the next brace is someone else's.
      if effects.contains("func ") || effects.contains(" var ") || effects.contains(" let ") {
        continue
      }
      if effects.range(of: #"\basync\b"#, options: .regularExpression) != nil {
        regions.append(open..<close(of: open))
      }
    }
    for start in find(Self.taskClosure + "|" + #"\baddTask(UnlessCancelled)?\s*(\([^()]*\))?\s*\{"#)
    {
      if let region = block(after: start) { regions.append(region) }
    }
    return regions
  }

  /// A task created with a closure: `Task {`, `Task.detached {`, `Task(priority: .low) {`.
  static let taskClosure =
    #"(?<![\w.])Task\s*(<[^{}()]*>)?\s*(\.detached)?\s*(\([^()]*\))?\s*\{"#

  /// Bodies of loops: `for … {`, `while … {`, `repeat {`, `.forEach {`.
  func loopRegions() -> [Range<Int>] {
    var regions: [Range<Int>] = []
    for keyword in ranges(#"(?<![\w.])(for|while)\b(?!\s*:)"#) {
      // The `while` of `repeat { … } while x` ends a loop whose body is found by `repeat`.
      if character(at: keyword.lowerBound) == "w",
        previousNonSpace(before: keyword.lowerBound) == "}"
      {
        continue
      }
      guard let region = block(after: keyword.upperBound) else { continue }
      // `for` is also an argument label (`func forecast(for city: String)`): a loop's
      // header has its `in`.
      let head = units.substring(
        with: NSRange(location: keyword.upperBound, length: region.lowerBound - keyword.upperBound))
      if character(at: keyword.lowerBound) == "f",
        head.range(of: #"\bin\b"#, options: .regularExpression) == nil
      {
        continue
      }
      regions.append(region)
    }
    for start in find(#"\brepeat\s*\{|\.forEach\s*(\(\s*)?\{"#) {
      if let region = block(after: start) { regions.append(region) }
    }
    return regions
  }

  /// Bodies of `@MainActor` types, extensions, functions and closures, and of the extensions
  /// of a type declared `@MainActor` in the same file.
  func mainActorRegions() -> [Range<Int>] {
    var regions: [Range<Int>] = []
    var types: [String] = []
    for attribute in ranges(#"@MainActor\b"#) {
      if previousNonSpace(before: attribute.lowerBound) == "{" {
        // `{ @MainActor in … }`: the closure's own body.
        if let open = enclosingBlocks(of: attribute.lowerBound).first { regions.append(open) }
        continue
      }
      let declaration = ranges(
        #"\G(\s*(@\w+(\([^()]*\))?|public|private|fileprivate|internal|package|final|static|"#
          + #"nonisolated|override|convenience|required|mutating))*\s*"#
          + #"(class|struct|enum|actor|extension|func|init)\b"#,
        in: attribute.upperBound..<length
      ).first
      guard let declaration else { continue }
      let keyword = units.substring(
        with: NSRange(location: declaration.lowerBound, length: declaration.count))
      var from = declaration.upperBound
      if keyword.hasSuffix("func") || keyword.hasSuffix("init"),
        let paren = find(#"\("#, in: from..<length).first
      {
        from = close(of: paren)
      }
      if let region = block(after: from) { regions.append(region) }
      if !(keyword.hasSuffix("func") || keyword.hasSuffix("init")
        || keyword.hasSuffix("extension")),
        let name = ranges(#"\G\s*\w+"#, in: declaration.upperBound..<length).first
      {
        types.append(
          units.substring(with: NSRange(location: name.lowerBound, length: name.count))
            .trimmingCharacters(in: .whitespacesAndNewlines))
      }
    }
    for name in types {
      let escaped = NSRegularExpression.escapedPattern(for: name)
      for start in find(#"\bextension\s+"# + escaped + #"\b"#) {
        if let region = block(after: start) { regions.append(region) }
      }
    }
    return regions
  }

  func previousNonSpace(before offset: Int) -> Character? {
    var index = offset - 1
    while index >= 0 {
      let here = character(at: index)
      if !here.isWhitespace { return here }
      index -= 1
    }
    return nil
  }

  func inside(_ offset: Int, _ regions: [Range<Int>]) -> Bool {
    regions.contains { $0.contains(offset) }
  }
}
