import Foundation

/// How often the threads of this process woke up: the context switches the kernel counted
/// for each of them (`/proc/self/task/*/status`, Linux).
///
/// Code that waits by suspending leaves the process asleep until something happens. Code
/// that polls (a loop around `Task.sleep`, a timer that looks whether something changed)
/// wakes a thread each time it looks, however short its sleep and on whichever thread or
/// task it runs: a 20 ms poll costs about ten switches per look, a process with nothing to
/// do about ten in half a second. A busy machine delays the wake-ups without adding any, so
/// the count does not depend on speed.
///
/// Other tests running at the same time count too, so ``quietWindow(_:within:atMost:)``
/// looks for one quiet window among several: a correct answer's process falls quiet once the
/// other tests are done; a poll never lets it.
public enum IdleWatch {
  /// The context switches of every thread of this process so far (a thread that has ended
  /// no longer counts); `nil` where `/proc` is not there (macOS).
  public static func switches() -> Int? {
    guard
      let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
    else { return nil }
    var total = 0
    for thread in threads {
      guard
        let status = try? String(
          contentsOfFile: "/proc/self/task/\(thread)/status", encoding: .utf8)
      else { continue }
      for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
        let count = line.split(separator: ":").last?.trimmingCharacters(in: .whitespaces)
        total += Int(count ?? "") ?? 0
      }
    }
    return total
  }

  /// The switches counted while this task sleeps for `window` (its own wake-up included);
  /// `nil` off Linux.
  public static func wakeups(during window: Duration) async -> Int? {
    guard let before = switches() else { return nil }
    try? await Task.sleep(for: window)
    guard let after = switches() else { return nil }
    return max(0, after - before)
  }

  /// Looks for a `window` in which the process woke up at most `limit` times, one window
  /// after another, for up to `patience`. Returns the fewest wake-ups seen in a window (at
  /// most `limit` when a quiet one was found); `nil` off Linux.
  public static func fewestWakeups(
    in window: Duration, within patience: Duration, atMost limit: Int
  ) async -> Int? {
    let clock = ContinuousClock()
    let end = clock.now + patience
    var fewest: Int?
    repeat {
      guard let count = await wakeups(during: window) else { return nil }
      fewest = min(fewest ?? count, count)
      if count <= limit { break }
    } while clock.now < end
    return fewest
  }
}
