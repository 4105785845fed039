import LegacyKit
import Synchronization

// The delegate way: one screen, one scan at a time.
//
//     func scanTapped() {
//       scanner.delegate = self
//       scanner.startScanning()
//     }
//     func barcodeScanner(_ scanner: BarcodeScanner, didScan code: String) { lookUp(code) }
//     func barcodeScanner(_ scanner: BarcodeScanner, didFailWithError error: Error) { show(error) }
//
// Now several parts of the app want a code at the same time: the checkout screen and the
// price-check widget, say. The scanner runs one scan at a time and answers a second
// `startScanning()` with `ScannerError.busy`.

/// An async face for a `BarcodeScanner` that any number of tasks may call at once.
///
/// Policy: **share one result.** Callers that arrive while a scan is running wait for that
/// scan and all get its code (or all get its error). A caller that arrives after a scan has
/// ended starts a new one.
final class SharedBarcodeScanner: BarcodeScannerDelegate, Sendable {
  private let scanner: BarcodeScanner
  /// Everyone waiting for the running scan; empty when no scan is running.
  private let waiting = Mutex<[CheckedContinuation<String, any Error>]>([])

  init(scanner: BarcodeScanner) {
    self.scanner = scanner
    scanner.delegate = self
  }

  /// Returns the next code the scanner reads, sharing a scan that is already running.
  func scan() async throws -> String {
    try await withCheckedThrowingContinuation { continuation in
      // Join the queue, and find out in the same step whether a scan is running. Deciding
      // under the lock means two callers can never both think they are first.
      let isFirst = waiting.withLock { waiting in
        waiting.append(continuation)
        return waiting.count == 1
      }
      // Only the first caller starts the scanner; a second start would only be told "busy".
      // Outside the lock: a synchronous scanner answers from inside `startScanning()`.
      if isFirst {
        scanner.startScanning()
      }
    }
  }

  func barcodeScanner(_ scanner: BarcodeScanner, didScan code: String) {
    for continuation in takeEveryone() {
      continuation.resume(returning: code)
    }
  }

  func barcodeScanner(_ scanner: BarcodeScanner, didFailWithError error: any Error) {
    for continuation in takeEveryone() {
      continuation.resume(throwing: error)
    }
  }

  /// Empties the list in one step and returns who was on it: each caller is resumed exactly
  /// once, a repeated report finds nobody, and the next caller starts a new scan.
  private func takeEveryone() -> [CheckedContinuation<String, any Error>] {
    waiting.withLock { waiting in
      defer { waiting.removeAll() }
      return waiting
    }
  }
}
