import Foundation

/// Mutant ids that survive edits elsewhere in the file: a hash of the mutated text (the
/// statement's lines, or the flipped line, trimmed, without comment-only lines) and the
/// mutation, e.g. `3f2a91c0:delete`, `3f2a91c0:flip:<`. The same text and mutation again
/// later in the file (two identical lines, two `<` on one line) gets `#2`, `#3`…
struct MutationIdentity {
  private var seen: [String: Int] = [:]

  mutating func next(text: String, kind: String) -> String {
    let hash = String(Digest.of(string: text).dropFirst(Digest.prefix.count).prefix(8))
    let key = "\(hash):\(kind)"
    let count = seen[key, default: 0] + 1
    seen[key] = count
    return count == 1 ? key : "\(key)#\(count)"
  }
}
