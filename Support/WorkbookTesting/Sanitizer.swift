import Foundation

/// True when the tests run under Thread Sanitizer, through `make tsan` (scripts/tsan.sh
/// sets `WORKBOOK_TSAN=1`).
///
/// The sanitizer makes every memory access several times slower. A test whose point is
/// volume, not interleaving, may use this to do less; a test that cannot work under the
/// sanitizer at all may skip with `.disabled(if: underThreadSanitizer, "why")`. Either way it
/// says why where it does so.
public let underThreadSanitizer = ProcessInfo.processInfo.environment["WORKBOOK_TSAN"] == "1"
