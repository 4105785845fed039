import Foundation

/// Rewrites the `"starterDigest"` values in workbook.json from the current starters, by
/// text substitution so the file keeps its formatting and key order.
public enum Fingerprint {
  public struct Change: Equatable, Sendable {
    public var exerciseID: String
    public var old: String
    public var new: String
  }

  /// The new workbook.json text and the changes made, for `digests` (exercise id → digest).
  ///
  /// Each `"starterDigest": "…"` occurrence is matched to the nearest `"id": "…"` before
  /// it; if that does not give exactly one occurrence per exercise, nothing is rewritten.
  public static func rewrite(
    _ text: String, digests: [String: String]
  ) throws(WorkbookError) -> (text: String, changes: [Change]) {
    let digestPattern = #/"starterDigest"\s*:\s*"(?<value>[^"\\]*)"/#
    let idPattern = #/"id"\s*:\s*"(?<id>[^"\\]*)"/#
    var result = ""
    var changes: [Change] = []
    var seen: Set<String> = []
    var cursor = text.startIndex
    for match in text.matches(of: digestPattern) {
      let before = text[text.startIndex..<match.range.lowerBound]
      guard let id = before.matches(of: idPattern).last?.output.id.description else {
        throw .metadata("workbook.json: a \"starterDigest\" has no \"id\" before it")
      }
      guard let digest = digests[id] else {
        throw .metadata("workbook.json: \"starterDigest\" after unknown exercise id \(id)")
      }
      guard seen.insert(id).inserted else {
        throw .metadata("workbook.json: exercise \(id) has more than one \"starterDigest\"")
      }
      let valueRange = match.output.value.startIndex..<match.output.value.endIndex
      result += text[cursor..<valueRange.lowerBound]
      result += digest
      cursor = valueRange.upperBound
      let old = String(match.output.value)
      if old != digest { changes.append(Change(exerciseID: id, old: old, new: digest)) }
    }
    result += text[cursor...]
    let missing = digests.keys.filter { !seen.contains($0) }.sorted()
    if !missing.isEmpty {
      throw .metadata(
        "workbook.json: no \"starterDigest\" key for \(missing.joined(separator: ", "))")
    }
    return (result, changes)
  }
}
