import Foundation

/// How often the threads of this process woke up: the voluntary context switches the kernel
/// counted for them (Linux), one each time a thread went to sleep to wait for something.
///
/// Code that waits by suspending leaves the process asleep until something happens. Code
/// that polls (a loop around `Task.sleep`, a timer that looks whether something changed)
/// wakes a thread each time it looks, however short its sleep and on whichever thread or
/// task it runs: a 20 ms poll costs a few switches per look, a process with nothing to do
/// about ten in half a second. A busy machine delays the wake-ups without adding any, so the
/// count does not depend on speed. (The involuntary switches, a running thread preempted by
/// another process, are left out: they grow with the machine's load, not with the code's.)
///
/// Other tests running at the same time count too, so ``fewestWakeups(in:within:atMost:)``
/// looks for one quiet window among several: a correct answer's process falls quiet once the
/// other tests are done; a poll never lets it.
public enum IdleWatch {
  /// The voluntary context switches of every thread of this process so far, those that
  /// have ended included (`getrusage`); `nil` off Linux.
  public static func switches() -> Int? {
    #if os(Linux)
    var usage = rusage()
    guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return nil }
    return Int(usage.ru_nvcsw)
    #else
    return nil
    #endif
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
  ///
  /// On a machine whose processors are saturated (see ``machineIsSaturated()``), the other
  /// tests of the process take far longer to end, so the patience stretches up to five
  /// times: a correct answer still finds its quiet window, and a poll still never does.
  public static func fewestWakeups(
    in window: Duration, within patience: Duration, atMost limit: Int
  ) async -> Int? {
    let clock = ContinuousClock()
    let start = clock.now
    var fewest: Int?
    while true {
      guard let count = await wakeups(during: window) else { return nil }
      fewest = min(fewest ?? count, count)
      if count <= limit { break }
      let waited = clock.now - start
      if waited >= patience * 5 || (waited >= patience && !machineIsSaturated()) { break }
    }
    return fewest
  }

  /// True when threads of this machine have been waiting for a processor most of the last
  /// ten seconds (Linux's CPU pressure, `/proc/pressure/cpu`; where that is missing, a
  /// load average above twice the processors). Other processes then delay this one's tests.
  public static func machineIsSaturated() -> Bool {
    if let pressure = try? String(contentsOfFile: "/proc/pressure/cpu", encoding: .utf8),
      let some = pressure.split(separator: "\n").first(where: { $0.hasPrefix("some ") }),
      let average = some.split(separator: " ").first(where: { $0.hasPrefix("avg10=") })
    {
      return (Double(average.dropFirst("avg10=".count)) ?? 0) >= 50
    }
    guard let load = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8),
      let oneMinute = load.split(separator: " ").first.flatMap({ Double($0) })
    else { return false }
    return oneMinute > 2 * Double(ProcessInfo.processInfo.activeProcessorCount)
  }
}
