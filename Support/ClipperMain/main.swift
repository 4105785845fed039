// `clipper NAME [--port PORT]`: chat from the terminal through the Chapter 8 server.
// A thin main: the work is `runClipper` in the Capstone module (your Chapter 8 code).

import Capstone
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

var arguments = Array(CommandLine.arguments.dropFirst())
var port: UInt16 = 4000
if let flag = arguments.firstIndex(of: "--port") {
  guard flag + 1 < arguments.count, let value = UInt16(arguments[flag + 1]) else {
    FileHandle.standardError.write(Data("clipper: --port needs a number\n".utf8))
    exit(2)
  }
  port = value
  arguments.removeSubrange(flag...flag + 1)
}
guard arguments.count == 1 else {
  FileHandle.standardError.write(Data("usage: clipper NAME [--port PORT]\n".utf8))
  exit(2)
}

// Writing to a closed pipe must be an error, not the end of the process.
signal(SIGPIPE, SIG_IGN)

do {
  try await runClipper(
    name: arguments[0], input: .standardInput,
    output: { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) },
    port: port)
} catch ClipperError.serverGone {
  FileHandle.standardError.write(Data("clipper: the server went away\n".utf8))
  exit(1)
} catch let error where "\(type(of: error))" == "Unfinished" {
  // The starters' placeholder: part of Chapter 8 is not written yet.
  FileHandle.standardError.write(
    Data(
      ("clipper: part of your Chapter 8 still throws the starter's Unfinished() placeholder; "
        + "`make check CHAPTER=8` shows which exercises are unfinished, and "
        + "`make clipper NAME=\(arguments[0]) PORT=\(port) SOURCE=solutions` runs the "
        + "reference client\n").utf8))
  exit(1)
} catch {
  FileHandle.standardError.write(Data("clipper: \(error)\n".utf8))
  exit(1)
}
