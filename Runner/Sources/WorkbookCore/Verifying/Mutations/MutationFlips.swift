import Foundation

/// The comparison operators and boolean literals of a file that a mutant may flip:
/// `<` ↔ `>=`, `>` ↔ `<=`, `==` ↔ `!=`, `true` ↔ `false`.
///
/// Read from the blanked code (comments and strings do not count). A comparison counts
/// only as a whole operator with a space on each side, as `swift format` writes binary
/// operators: that leaves out generics (`Result<Value, Failure>`), arrows (`->`), ranges
/// (`..<`) and identity (`===`). A boolean counts as a whole word not after a `.`.
enum MutationFlips {
  struct Flip: Equatable {
    /// 0-based line and the character offset of the operator in it.
    var line: Int
    var column: Int
    var from: String
    var to: String
  }

  static let comparisons = [
    "<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "==",
  ]
  static let booleans = ["true": "false", "false": "true"]

  static func find(in map: MutationSourceMap) -> [Flip] {
    var flips: [Flip] = []
    for (index, line) in map.lines.enumerated() {
      let code = Array(line.code)
      if line.trimmedCode.hasPrefix("#") { continue }  // `#if compiler(>=6)` and the like
      var position = 0
      while position < code.count {
        let character = code[position]
        if MutationStatements.operatorCharacters.contains(character) {
          let end =
            code[position...].firstIndex {
              !MutationStatements.operatorCharacters.contains($0)
            } ?? code.count
          let symbol = String(code[position..<end])
          if let flipped = comparisons[symbol], position > 0, code[position - 1] == " ",
            end < code.count, code[end] == " "
          {
            flips.append(Flip(line: index, column: position, from: symbol, to: flipped))
          }
          position = end
        } else if isWordCharacter(character) {
          let end = code[position...].firstIndex { !isWordCharacter($0) } ?? code.count
          let word = String(code[position..<end])
          let before = position > 0 ? code[position - 1] : " "
          if let flipped = booleans[word], before != ".", before != "$", before != "`" {
            flips.append(Flip(line: index, column: position, from: word, to: flipped))
          }
          position = end
        } else {
          position += 1
        }
      }
    }
    return flips
  }

  static func isWordCharacter(_ character: Character) -> Bool {
    character.isLetter || character.isNumber || character == "_"
  }
}
