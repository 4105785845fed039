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
/// Policy: **share one result.** The first caller of a scan starts a task that runs it; every
/// caller who arrives while that task is running awaits the same task and gets its code (or
/// its error). The task is forgotten as soon as the scan reports, so the next caller starts a
/// new scan.
final class SharedBarcodeScanner: BarcodeScannerDelegate, Sendable {
  private struct State {
    /// The scan running now, shared by everyone who asks while it runs.
    var running: Task<String, any Error>?
    /// The one continuation of the running scan: only its task waits on the scanner.
    var waiting: CheckedContinuation<String, any Error>?
  }

  private let scanner: BarcodeScanner
  private let state = Mutex(State())

  init(scanner: BarcodeScanner) {
    self.scanner = scanner
    scanner.delegate = self
  }

  func scan() async throws -> String {
    let task = state.withLock { state in
      if let running = state.running { return running }
      let task = Task { try await self.scanOnce() }
      state.running = task
      return task
    }
    return try await task.value
  }

  /// One scan, with one stored continuation, as in exercise 2.1.
  private func scanOnce() async throws -> String {
    try await withCheckedThrowingContinuation { continuation in
      state.withLock { $0.waiting = continuation }
      scanner.startScanning()
    }
  }

  func barcodeScanner(_ scanner: BarcodeScanner, didScan code: String) {
    endScan()?.resume(returning: code)
  }

  func barcodeScanner(_ scanner: BarcodeScanner, didFailWithError error: any Error) {
    endScan()?.resume(throwing: error)
  }

  /// Forgets the running scan, so the next caller starts a new one, and hands back its
  /// continuation; a repeated report finds nothing.
  private func endScan() -> CheckedContinuation<String, any Error>? {
    state.withLock { state in
      guard let continuation = state.waiting else { return nil }
      state.waiting = nil
      state.running = nil
      return continuation
    }
  }
}
