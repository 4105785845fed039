// The migration payoff: many concurrent waits as legacy coroutines (CoroutineKit: one
// thread per coroutine, blocked while it waits) against tasks (suspended, holding no
// thread). Each variant runs in a child process of its own, this same executable started
// again with `--child`, so that each peak of memory belongs to one variant only.
//
// What a child does: start `count` waiters, each of which waits on one shared promise (a
// `CoPromise` in a coroutine, the solution's `Promise` in a task); once every waiter has
// arrived, fulfil the promise, and wait until all are done. It prints the wall time of all
// that, its peak resident memory (VmHWM, the same as ru_maxrss) and its thread count while
// everyone waited.

import CoroutineKit
import Dispatch
import Foundation
import Synchronization

/// What a child process reports.
struct ChildReport {
  var seconds: Double
  var peakKiB: Double
  var threads: Int
}

enum ChildMode: String {
  case coroutines
  case tasks
  /// Starts and reports, waiting for nothing: the process's own footprint.
  case idle
}

/// A line of `/proc/self/status`, such as "VmHWM" or "Threads", as a number; nil elsewhere.
func processStatus(_ key: String) -> Int? {
  guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else {
    return nil
  }
  for line in status.split(separator: "\n") where line.hasPrefix("\(key):") {
    let digits = line.dropFirst(key.count + 1).filter(\.isNumber)
    return Int(digits)
  }
  return nil
}

/// The child's side: waits as asked, then prints "report SECONDS PEAK_KIB THREADS".
func runChild(_ mode: ChildMode, count: Int) async throws {
  let arrived = Atomic<Int>(0)
  var threads = 0
  let elapsed: Double
  switch mode {
  case .idle:
    elapsed = 0
    threads = processStatus("Threads") ?? 0
  case .coroutines:
    let promise = CoPromise<Int>()
    let done = DispatchGroup()
    let total = Atomic<Int>(0)
    elapsed = await timed {
      for _ in 0..<count {
        done.enter()
        DispatchQueue.global().startCoroutine {
          defer { done.leave() }
          arrived.add(1, ordering: .relaxed)
          total.add(try promise.await(), ordering: .relaxed)
        }
      }
      // When the system refuses a thread, that coroutine never starts (Foundation's Thread
      // fails without a word): give up once no coroutine has arrived for 10 seconds, and
      // say how many did.
      var seen = 0
      var lastProgress = ContinuousClock.now
      while arrived.load(ordering: .relaxed) < count {
        usleep(50)
        let now = arrived.load(ordering: .relaxed)
        if now != seen {
          seen = now
          lastProgress = .now
        } else if ContinuousClock.now - lastProgress > .seconds(10) {
          fail(
            "only \(now) of \(count) coroutines started (\(processStatus("Threads") ?? 0) "
              + "threads); the system refused more threads")
        }
      }
      threads = processStatus("Threads") ?? 0
      promise.success(1)
      done.wait()
    }
    guard total.load(ordering: .relaxed) == count else {
      fail("only \(total.load(ordering: .relaxed)) of \(count) coroutines got the value")
    }
  case .tasks:
    // Separate tasks, not a task group: the promise resumes its awaiters in no particular
    // order, and a group's bookkeeping makes children that finish out of order much dearer
    // (the Promise rows show how much); the coroutines have no such cost either.
    let promise = Promise<Int>()
    let countdown = Countdown(count)
    elapsed = await timed {
      for _ in 0..<count {
        Task { countdown.arrive(with: (try? await promise.value) ?? 0) }
      }
      while promise.waitingCount < count { await Task.yield() }
      threads = processStatus("Threads") ?? 0
      promise.succeed(1)
      let total = await countdown.wait()
      guard total == count else { fail("only \(total) of \(count) tasks got the value") }
    }
  }
  let peak = processStatus("VmHWM") ?? 0
  print("report \(elapsed) \(peak) \(threads)")
}

/// This executable, to start again as a child.
func ownExecutable() -> URL {
  #if os(Linux)
  URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
  #else
  URL(fileURLWithPath: CommandLine.arguments[0])
  #endif
}

/// Runs a child and reads its report; the error says what went wrong (a crash, a limit).
func runChildProcess(
  _ mode: ChildMode, count: Int, timeout: Double = 180
) -> Result<
  ChildReport, ChildFailure
> {
  let process = Process()
  process.executableURL = ownExecutable()
  process.arguments = ["--child", mode.rawValue, String(count)]
  let output = Pipe()
  let errors = Pipe()
  process.standardOutput = output
  process.standardError = errors
  let finished = DispatchSemaphore(value: 0)
  process.terminationHandler = { _ in finished.signal() }
  do {
    try process.run()
  } catch {
    return .failure(ChildFailure(reason: "could not start the child process: \(error)"))
  }
  // Read while it runs, so a chatty child can never fill the pipe and stall.
  let reader = DispatchQueue(label: "bench.child-output")
  let collected = Mutex<(out: Data, err: Data)>((Data(), Data()))
  let readers = DispatchGroup()
  reader.async(group: readers) {
    let data = output.fileHandleForReading.readDataToEndOfFile()
    collected.withLock { $0.out = data }
  }
  DispatchQueue.global().async(group: readers) {
    let data = errors.fileHandleForReading.readDataToEndOfFile()
    collected.withLock { $0.err = data }
  }
  if finished.wait(timeout: .now() + timeout) == .timedOut {
    process.terminate()
    finished.wait()
    readers.wait()
    return .failure(ChildFailure(reason: "did not finish within \(Int(timeout)) s (stopped)"))
  }
  readers.wait()
  let (out, err) = collected.withLock { ($0.out, $0.err) }
  let text = String(decoding: out, as: UTF8.self)
  let words = text.split(whereSeparator: \.isWhitespace)
  guard process.terminationStatus == 0, process.terminationReason == .exit,
    let index = words.firstIndex(of: "report"), words.count >= index + 4,
    let seconds = Double(words[index + 1]), let peak = Double(words[index + 2]),
    let threads = Int(words[index + 3])
  else {
    let how =
      process.terminationReason == .uncaughtSignal
      ? "was killed by signal \(process.terminationStatus)"
      : "exited with status \(process.terminationStatus)"
    let said = String(decoding: err, as: UTF8.self)
      .split(separator: "\n").suffix(3).joined(separator: " / ")
    return .failure(ChildFailure(reason: "the child \(how)" + (said.isEmpty ? "" : ": \(said)")))
  }
  return .success(ChildReport(seconds: seconds, peakKiB: peak, threads: threads))
}

struct ChildFailure: Error {
  var reason: String
}

/// Wall time and peak memory for `count` waits as coroutines and as tasks, `runs` child
/// processes of each, alternating. If coroutines cannot reach `count`, the largest count
/// among a few smaller ones that works is measured instead, and `notes` say what happened.
func measureMigration(count: Int, runs: Int) -> (entries: [Entry], notes: [String]) {
  var notes: [String] = []
  Progress.say("migration: an idle child, for the process's own footprint")
  let idle = (0..<3).compactMap { _ in try? runChildProcess(.idle, count: 0).get().peakKiB }
  let idlePeak = idle.isEmpty ? .nan : median(idle) / 1024

  // Can the coroutines reach `count` at all? Find out once before timing anything.
  var coroutineCount = count
  var attempt = runChildProcess(.coroutines, count: count)
  if case .failure(let failure) = attempt {
    notes.append(
      "\(count.formatted()) coroutine threads failed on this machine: \(failure.reason).")
    for smaller in [count / 2, count / 5, count / 10, count / 20] where smaller > 0 {
      Progress.say("migration: \(count) coroutines failed; trying \(smaller)")
      attempt = runChildProcess(.coroutines, count: smaller)
      if case .success = attempt {
        coroutineCount = smaller
        notes.append(
          "The largest count tried that worked is \(smaller.formatted()); both variants are "
            + "measured at that count, so that they compare.")
        break
      } else if case .failure(let again) = attempt {
        notes.append("\(smaller.formatted()) failed too: \(again.reason).")
      }
    }
  }
  let group = "Migration payoff: concurrent waits on one promise"
  let coroutineName = "coroutines (CoroutineKit, a thread each)"
  let taskName = "tasks (solution Promise), a Task each"
  func label(_ what: String, _ n: Int) -> String { "\(n.formatted()) waits: \(what)" }
  var coroutineTime = Entry(
    group: group, configuration: label("wall time", coroutineCount), variant: coroutineName,
    unit: .milliseconds)
  var taskTime = Entry(
    group: group, configuration: label("wall time", coroutineCount), variant: taskName,
    unit: .milliseconds)
  var coroutinePeak = Entry(
    group: group, configuration: label("peak memory (VmHWM)", coroutineCount),
    variant: coroutineName, unit: .mebibytes)
  var taskPeak = Entry(
    group: group, configuration: label("peak memory (VmHWM)", coroutineCount), variant: taskName,
    unit: .mebibytes)
  var coroutineThreads: [Int] = []
  var taskThreads: [Int] = []
  guard case .success = attempt else {
    notes.append("No coroutine count worked, so neither variant was measured.")
    coroutineTime.notApplicable = Footnote(marker: "[d]", text: notes.joined(separator: " "))
    coroutinePeak.notApplicable = coroutineTime.notApplicable
    return ([coroutineTime, taskTime, coroutinePeak, taskPeak], notes)
  }
  for run in 0..<runs {
    Progress.say("migration: run \(run + 1) of \(runs) (a child process each)")
    let order: [ChildMode] = run.isMultiple(of: 2) ? [.coroutines, .tasks] : [.tasks, .coroutines]
    for mode in order {
      let n = coroutineCount
      switch runChildProcess(mode, count: n) {
      case .success(let report):
        if mode == .coroutines {
          coroutineTime.samples.append(report.seconds * 1e3)
          coroutinePeak.samples.append(report.peakKiB / 1024)
          coroutineThreads.append(report.threads)
        } else {
          taskTime.samples.append(report.seconds * 1e3)
          taskPeak.samples.append(report.peakKiB / 1024)
          taskThreads.append(report.threads)
        }
      case .failure(let failure):
        notes.append("A \(mode.rawValue) run failed and is left out: \(failure.reason).")
      }
    }
  }
  coroutineTime.versus = ratio(coroutineTime, to: taskTime, name: "tasks")
  coroutinePeak.versus = ratio(coroutinePeak, to: taskPeak, name: "tasks")
  taskTime.versus = "reference"
  taskPeak.versus = "reference"
  if let most = coroutineThreads.max(), let tasks = taskThreads.max() {
    notes.append(
      "Threads in the process while everyone waited: up to \(most.formatted()) with coroutines, "
        + "\(tasks.formatted()) with tasks.")
  }
  if idlePeak.isFinite {
    notes.append(
      String(
        format: "Peak memory includes the process's own footprint: %.1f MiB for a child that "
          + "starts and waits for nothing.", idlePeak))
  }
  return ([coroutineTime, taskTime, coroutinePeak, taskPeak], notes)
}
