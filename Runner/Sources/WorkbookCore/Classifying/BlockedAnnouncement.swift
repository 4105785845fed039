/// A blocked pool that a watchdog saw, read from the test process's stderr.
///
/// When blocking calls hold every thread of Swift's concurrency pool, the test that waits
/// cannot run again to record its issue, and the run hangs until the runner stops it.
/// `WorkbookTesting` writes the finding to stderr from the watchdog's own thread first
/// (only when the runner sets `WORKBOOK_EXPLAIN`): `workbook-blocked: <test>\t<finding>`.
public struct BlockedAnnouncement: Sendable, Equatable {
  public static let marker = "workbook-blocked:"

  /// The test that was waiting, as its events name it; empty when unknown.
  public var test: String
  /// The finding, opening with the pool's or the main actor's blocked marker.
  public var finding: String

  /// The first announcement in `stderr`, if any: the first blocking is the cause, later
  /// ones follow from it.
  public static func first(in stderr: String) -> BlockedAnnouncement? {
    for line in stderr.split(separator: "\n") where line.hasPrefix(marker) {
      let fields = line.dropFirst(marker.count).drop { $0 == " " }
        .split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
      guard fields.count == 2, !fields[1].isEmpty else { continue }
      return BlockedAnnouncement(test: fields[0], finding: fields[1])
    }
    return nil
  }
}
