import Foundation

/// Starts a helper process (in a process group of its own, as `swift build` starts its
/// compiler jobs) and then waits for an answer that never comes. The helper's arguments
/// name the current folder, so the runner's tests can find it.
public func waitForAnswer() -> Int {
  let helper = Process()
  helper.executableURL = URL(fileURLWithPath: "/bin/sh")
  helper.arguments = [
    "-c", "while :; do sleep 1; done",
    FileManager.default.currentDirectoryPath + "/endless-helper",
  ]
  try? helper.run()
  while true { Thread.sleep(forTimeInterval: 60) }
}
