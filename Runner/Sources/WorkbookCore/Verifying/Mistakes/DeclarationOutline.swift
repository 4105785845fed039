import Foundation

/// A file's declarations as swift-format lays them out: its lines indented two spaces or
/// less (top-level declarations and their members), without blank lines and comments.
///
/// Two files with the same outline differ only inside bodies, which leaves the compiled
/// module's interface as it was, so the tests that import it are not compiled again: a
/// round of such variants builds in about a second, one that adds or changes a declaration
/// (even a private one) in several. ``MistakeChecker`` runs each exercise's variants that
/// change declarations first, so that the later rounds are the cheap ones. It is only an
/// order: a wrong guess costs time, never a verdict.
struct DeclarationOutline: Equatable {
  let lines: [Substring]

  init(_ text: String) {
    lines =
      text.split(separator: "\n", omittingEmptySubsequences: true).filter { line in
        let indent = line.prefix { $0 == " " }.count
        let rest = line.dropFirst(indent)
        return indent <= 2 && !rest.isEmpty && !rest.hasPrefix("//")
      }
      .map { $0.trimmingSuffix() }
      .sorted()
  }
}

extension Substring {
  fileprivate func trimmingSuffix() -> Substring {
    var end = endIndex
    while end > startIndex, self[index(before: end)] == " " { end = index(before: end) }
    return self[startIndex..<end]
  }
}
