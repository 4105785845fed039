// The machine the numbers came from, for the header of the table and RESULTS.md.

import Foundation

struct Machine {
  var cpu: String
  var cores: Int
  var memory: String
  var system: String
  var swift: String
  var date: String
  var commit: String

  static func describe(root: URL) -> Machine {
    let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
    let cpu =
      cpuinfo.split(separator: "\n")
      .first { $0.hasPrefix("model name") }
      .flatMap { $0.split(separator: ":", maxSplits: 1).last }
      .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
    let bytes = ProcessInfo.processInfo.physicalMemory
    let memory = String(format: "%.1f GiB", Double(bytes) / 1_073_741_824)
    let release =
      ((try? String(contentsOfFile: "/etc/os-release", encoding: .utf8)) ?? "")
      .split(separator: "\n")
      .first { $0.hasPrefix("PRETTY_NAME=") }
      .map {
        $0.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
      }
    var names = utsname()
    uname(&names)
    let kernel = withUnsafeBytes(of: &names.release) {
      String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
    }
    let machine = withUnsafeBytes(of: &names.machine) {
      String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
    }
    let system = [release, "kernel \(kernel)", machine].compactMap { $0 }.joined(separator: ", ")
    let swift =
      command(["swift", "--version"])?.split(separator: "\n")
      .first { $0.contains("Swift version") }
      .map(String.init) ?? "Swift (version unknown)"
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    let commit =
      command(["git", "-C", root.path, "rev-parse", "--short=12", "HEAD"])?
      .trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
    let dirty =
      command(["git", "-C", root.path, "status", "--porcelain", "--untracked-files=no"])
      .map { $0.isEmpty ? "" : " with uncommitted changes" } ?? ""
    return Machine(
      cpu: cpu, cores: ProcessInfo.processInfo.activeProcessorCount, memory: memory,
      system: system, swift: swift, date: formatter.string(from: Date()), commit: commit + dirty)
  }
}

/// The load averages over 1, 5 and 15 minutes, as /proc/loadavg gives them.
func loadAverage() -> String {
  let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
  let parts = text.split(separator: " ").prefix(3)
  return parts.count == 3 ? parts.joined(separator: ", ") : "unknown"
}

/// The 1-minute load average, for deciding whether the machine was busy.
func loadOneMinute() -> Double {
  Double(loadAverage().split(separator: ",").first ?? "") ?? .nan
}

/// Runs a command found on PATH and returns what it printed, or nil if it failed.
func command(_ arguments: [String]) -> String? {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
  process.arguments = arguments
  let output = Pipe()
  process.standardOutput = output
  process.standardError = FileHandle.nullDevice
  do { try process.run() } catch { return nil }
  let data = output.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return process.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
}
