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

  init(scanner: BarcodeScanner) {
    self.scanner = scanner
    scanner.delegate = self
  }

  /// Returns the next code the scanner reads, sharing a scan that is already running.
  func scan() async throws -> String {
    // TODO: Implement the policy above for any number of callers at once: each is answered
    // exactly once, with the code or the error of the scan it shared.
    throw Unfinished()
  }

  func barcodeScanner(_ scanner: BarcodeScanner, didScan code: String) {
  }

  func barcodeScanner(_ scanner: BarcodeScanner, didFailWithError error: any Error) {
  }
}

/// Thrown until the TODO above is done.
private struct Unfinished: Error {}
