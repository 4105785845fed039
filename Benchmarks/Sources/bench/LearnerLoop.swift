// The learner's loop: how long `make check CHAPTER=1` takes after one edit, and cold on a
// fresh clone. scripts/bench-loop.sh does the work in a scratch clone (so the learner's own
// tree is never touched) and prints one line per timing; this reads them into rows.

import Foundation

func measureLearnerLoop(root: URL, runs: Int) -> (entries: [Entry], notes: [String]) {
  let group = "The learner's loop"
  var warm = Entry(
    group: group, configuration: "edit one Chapter 1 starter → make check CHAPTER=1 verdicts",
    variant: "incremental build + grading", unit: .seconds)
  var cold = Entry(
    group: group, configuration: "make check CHAPTER=1 on a fresh clone",
    variant: "builds runner + Chapter 1, grades", unit: .seconds)
  let script = root.appendingPathComponent("scripts/bench-loop.sh")
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
  process.arguments = ["bash", script.path, String(runs)]
  process.currentDirectoryURL = root
  let output = Pipe()
  process.standardOutput = output
  // Progress and errors from the script go straight to our stderr.
  do {
    try process.run()
  } catch {
    let note = "The learner's loop was not measured: could not start \(script.path): \(error)."
    return ([], [note])
  }
  let data = output.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
    let words = line.split(separator: " ")
    guard words.count == 2, let value = Double(words[1]) else { continue }
    if words[0] == "cold" { cold.samples.append(value) }
    if words[0] == "warm" { warm.samples.append(value) }
  }
  guard process.terminationStatus == 0, !cold.samples.isEmpty, warm.samples.count == runs else {
    let note =
      "The learner's loop was not measured: scripts/bench-loop.sh exited with status "
      + "\(process.terminationStatus) (its messages are above)."
    return ([], [note])
  }
  cold.versus = "one run: a fresh clone builds everything"
  warm.versus = "median of \(runs)"
  return ([warm, cold], [])
}
