import Foundation

/// The CPU time this process has used so far, user and system, in milliseconds.
///
/// A task that waits by suspending uses next to none while it waits; one that spins (a
/// `Task.yield()` loop checking for a value) uses a core's worth of it, or its share of one
/// on a busy machine, which stays far above the first. Another machine's load does not
/// count here: only this process's own work.
public func processCPUMilliseconds() -> Int {
  var usage = rusage()
  #if os(Linux)
  let who = RUSAGE_SELF.rawValue
  #else
  let who = RUSAGE_SELF
  #endif
  guard getrusage(who, &usage) == 0 else { return 0 }
  let user = Int(usage.ru_utime.tv_sec) * 1000 + Int(usage.ru_utime.tv_usec) / 1000
  let system = Int(usage.ru_stime.tv_sec) * 1000 + Int(usage.ru_stime.tv_usec) / 1000
  return user + system
}
