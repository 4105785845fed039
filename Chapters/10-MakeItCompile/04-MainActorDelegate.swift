import LegacyKit

// Code from a stock-taking app, written before Swift 6. It builds in the Swift 5 language
// mode and has worked for years; in the Swift 6 mode it does not compile. Make it compile,
// and keep every promise its doc comments make.

/// What the status line of the aisle screen says.
enum AisleScanStatus: Equatable, Sendable {
  /// Not started yet.
  case idle
  /// The camera is reading labels.
  case scanning
  /// The camera was taken away, after `labelsSoFar` labels.
  case paused(ShelfScanner.Interruption, labelsSoFar: Int)
  /// The aisle is done: `labelCount` labels in all.
  case finished(labelCount: Int)
}

/// The screen a clerk scans the shelf labels of an aisle with. Its state belongs to the main
/// actor: the view reads it there, and it changes only on the main thread.
///
/// Two promises the screen keeps:
/// - Each session event the scanner reports is on the status line by the time the delegate
///   method returns: the scanner redraws its preview right after.
/// - Every label is listed, in the order the scanner read it, and a label read before a
///   session event is listed before the screen shows that event (the counts in the status
///   line include it).
@MainActor
final class AisleScanModel {
  /// The labels read so far, in the order the scanner read them.
  private(set) var labels: [String] = []
  /// The status line.
  private(set) var status = AisleScanStatus.idle

  let scanner: ShelfScanner

  init(scanner: ShelfScanner) {
    self.scanner = scanner
  }

  /// Becomes the scanner's delegates and starts the camera.
  func start() {
    scanner.sessionDelegate = self
    scanner.labelDelegate = self
    scanner.startRunning()
  }

  /// Ends the aisle: the status line shows the count once the camera has stopped.
  func finish() {
    scanner.stopRunning()
  }
}

// The scanner calls its session delegate on the main queue.
extension AisleScanModel: ShelfScannerSessionDelegate {
  func shelfScannerDidStartRunning(_ scanner: ShelfScanner) {
    status = .scanning
  }

  func shelfScanner(_ scanner: ShelfScanner, wasInterruptedBy reason: ShelfScanner.Interruption) {
    status = .paused(reason, labelsSoFar: labels.count)
  }

  func shelfScannerInterruptionEnded(_ scanner: ShelfScanner) {
    status = .scanning
  }

  func shelfScannerDidStopRunning(_ scanner: ShelfScanner) {
    status = .finished(labelCount: labels.count)
  }
}

// The scanner calls its label delegate on its decoding queue, a background queue.
extension AisleScanModel: ShelfScannerLabelDelegate {
  func shelfScanner(_ scanner: ShelfScanner, didRead label: String) {
    labels.append(label)
  }
}
