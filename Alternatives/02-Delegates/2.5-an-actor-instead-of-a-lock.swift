import LegacyKit

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
/// scan and all get its code (or all get its error). The waiting callers live in an actor
/// instead of behind a lock; the delegate methods hop onto it with a task.
final class SharedBarcodeScanner: BarcodeScannerDelegate, Sendable {
  private let scanner: BarcodeScanner
  private let callers = WaitingCallers()

  init(scanner: BarcodeScanner) {
    self.scanner = scanner
    scanner.delegate = self
  }

  func scan() async throws -> String {
    try await callers.join(startingIfFirst: scanner)
  }

  func barcodeScanner(_ scanner: BarcodeScanner, didScan code: String) {
    Task { await callers.answerEveryone(with: .success(code)) }
  }

  func barcodeScanner(_ scanner: BarcodeScanner, didFailWithError error: any Error) {
    Task { await callers.answerEveryone(with: .failure(error)) }
  }
}

/// Everyone waiting for the running scan. The actor runs one of these methods at a time.
private actor WaitingCallers {
  private var waiting: [CheckedContinuation<String, any Error>] = []

  func join(startingIfFirst scanner: BarcodeScanner) async throws -> String {
    try await withCheckedThrowingContinuation { continuation in
      waiting.append(continuation)
      if waiting.count == 1 {
        // A synchronous scanner reports from inside this call; its report waits for the
        // actor, so it finds this caller on the list.
        scanner.startScanning()
      }
    }
  }

  func answerEveryone(with result: Result<String, any Error>) {
    let everyone = waiting
    waiting = []
    for continuation in everyone {
      continuation.resume(with: result)
    }
  }
}
