import Foundation

/// Prints `megabytes` MiB to stdout and as much to stderr, then answers 42.
public func chatter(megabytes: Int) -> Int {
  let line = Data((String(repeating: "chatter ", count: 127) + "chatter\n").utf8)
  var chunk = Data()
  for _ in 0..<(1 << 20) / line.count { chunk.append(line) }
  for _ in 0..<megabytes {
    FileHandle.standardOutput.write(chunk)
    FileHandle.standardError.write(chunk)
  }
  return 42
}
