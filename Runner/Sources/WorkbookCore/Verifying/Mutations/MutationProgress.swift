import Dispatch
import Foundation
import Synchronization

/// The live progress of `workbook mutate` on stderr: a status line rewritten every second on
/// a terminal, otherwise a plain line every 10 s (``StatusLine``), so that a run of many
/// minutes always shows where it is, even while one build or test runs for long.
///
/// It shows the phase (round, building or grading), how many mutants are done and how many
/// survived so far, and the time since the start. Lines printed with ``print(_:)`` go to
/// stdout between two refreshes.
final class MutationProgress: Sendable {
  private struct State {
    var phase = "starting"
    var done = 0
    var total = 0
    var survivors = 0
    var stopped = false
  }

  private let status: StatusLine
  private let state = Mutex(State())
  private let started = DispatchTime.now()

  init(status: StatusLine) {
    self.status = status
  }

  /// Starts refreshing the status once a second until ``stop()``.
  func start() {
    Thread.detachNewThread { [self] in
      while !state.withLock({ $0.stopped }) {
        refresh()
        Thread.sleep(forTimeInterval: 1)
      }
    }
  }

  func stop() {
    state.withLock { $0.stopped = true }
    status.clear()
  }

  func phase(_ text: String) {
    state.withLock { $0.phase = text }
    refresh()
  }

  /// Adds to the total of mutants to grade.
  func expect(_ count: Int) {
    state.withLock { $0.total += count }
  }

  /// Counts mutants graded (and how many of them survived).
  func graded(_ count: Int, survivors: Int) {
    state.withLock {
      $0.done += count
      $0.survivors += survivors
    }
  }

  /// Prints `line` on stdout, clearing the status line first.
  func print(_ line: String) {
    status.clear()
    Output.out(line)
  }

  private func refresh() {
    let text = state.withLock { state -> String? in
      guard !state.stopped else { return nil }
      let survivors = state.survivors == 1 ? "1 survivor" : "\(state.survivors) survivors"
      return "mutate: \(state.phase) · \(state.done) of \(state.total) mutants graded, "
        + "\(survivors) · \(Self.elapsed(since: started))"
    }
    if let text { status.show(text) }
  }

  /// "42 s", "3 min 05 s".
  static func elapsed(since start: DispatchTime) -> String {
    let seconds = Int(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
    return seconds < 60
      ? "\(seconds) s" : String(format: "%d min %02d s", seconds / 60, seconds % 60)
  }
}
